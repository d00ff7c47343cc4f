package backend_test

import (
	"strings"
	"testing"
	"time"
)

// The write budget of one turn on the AWS backend: one bench turn (a bash
// call returning 2 KB, then a 4 KB answer streamed in ~80 B chunks, one
// every 60 ms — ~3 s of stream, which the AWS backend's 500 ms flush
// cadence writes as ~7 text_delta events) against the endpoint, its
// DynamoDB writes counted from the items (awscost.Meter: item size, every
// GSI/LSI copy). It fails if a change makes the turn write more than the
// figures measured when it was written (docs/PERFORMANCE.md, "AWS
// orchestration cost per agent step"): lower them when a change saves
// writes.
//
// Measured (2026-12-07, moto): 36 write calls and 60 write units per turn,
// the submission record deflated within one unit and text_delta items
// outside lsi1 (before those, 73 units: each turn's answer and tool output
// its own bytes — until then the benchmark repeated them, and the
// shared-string store wrote them once for all turns — the repair index's
// key unmoved by a write, text_delta items within one unit; 2026-12-03: 35, 84 with repeated bytes; 2026-12-01: 37, 85, with a chunk item per completed step for its usage;
// before issue 16: 182 calls, 323 units; with the adapters' reductions
// but a chunk item and a text_delta event per 50 ms flush: 132, 214). The
// margin: a slow machine stretches the paced stream over a flush or two
// more (a text_delta item and the rounding of one more item), and one
// lease renewal (a submission write and its GSI copy) when the
// stream outlasts a heartbeat.
const (
	budgetWriteCalls = 36 + 4 // PutItem + UpdateItem + DeleteItem per turn
	budgetWriteUnits = 60 + 6 // write units per turn: table + GSI + LSI
)

func TestTurnWriteBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("a paced turn against the endpoint")
	}
	v := costVariant{Name: "budget", AnswerBytes: 4096, ChunkBytes: 80, ToolBytes: 2048, Pace: 60 * time.Millisecond}
	r := runCostTurns(t, v, 1)
	var calls int64
	var wu float64
	for op, u := range r.Units {
		if strings.HasSuffix(op, "PutItem") || strings.HasSuffix(op, "UpdateItem") || strings.HasSuffix(op, "DeleteItem") {
			calls += u.Calls
			wu += u.WU()
		}
	}
	var b strings.Builder
	r.Print(&b)
	t.Logf("one turn:\n%s", b.String())
	t.Logf("writes per turn: %d calls, %.1f write units (budget %d, %d)", calls, wu, budgetWriteCalls, budgetWriteUnits)
	if calls > budgetWriteCalls {
		t.Errorf("%d DynamoDB write calls per turn, budget %d", calls, budgetWriteCalls)
	}
	if wu > budgetWriteUnits {
		t.Errorf("%.1f DynamoDB write units per turn, budget %d", wu, budgetWriteUnits)
	}
}
