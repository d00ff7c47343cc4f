package backend_test

import (
	"strings"
	"testing"
	"time"
)

// The write budget of one turn on the AWS backend: one bench turn (a bash
// call returning 2 KB, then a 4 KB answer streamed in ~80 B chunks, one
// every 60 ms, so each of the engine's 50 ms flushes holds one chunk)
// against the endpoint, its DynamoDB writes counted from the items
// (awscost.Meter: item size, every GSI/LSI copy). It fails if a change
// makes the turn write more than the figures measured when it was written
// (docs/PERFORMANCE.md, "AWS orchestration cost per agent step"): lower
// them when a change saves writes.
//
// Measured (2026-12-01, moto): 132 write calls and 214 write units per
// turn (before the reductions of issue 16: 182 calls, 323 units). Per
// flush of the 4 KB answer's ~51 chunks the turn writes a chunk item and a
// text_delta event with its LSI copy: 153 of the 214 units, set by the
// engine's flush cadence, not by the adapter. The margin is one lease
// renewal (a submission write and its GSI copy), which a slow endpoint
// can add when the stream outlasts a heartbeat.
const (
	budgetWriteCalls = 132 + 2 // PutItem + UpdateItem + DeleteItem per turn
	budgetWriteUnits = 214 + 4 // write units per turn: table + GSI + LSI
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
