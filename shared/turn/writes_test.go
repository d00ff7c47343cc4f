package turn_test

import (
	"context"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// maxTurnCommits is what one bench turn (accept, model → tools → model →
// commit) costs the embedded store in committed write transactions: accept
// 1; each model phase 4 (the queue receive, the lease, the stream's tail
// with its completion marker — on its own, so a finished stream is never
// bought twice — and the closing batch: assistant node, advance, next send
// and the message's delete); the tools phase 5 (receive, lease, the call's
// started marker, its result, the closing batch); commit 2 (receive, the
// whole phase). A change that adds a write fails here, in review, rather
// than in a benchmark nobody reads.
const maxTurnCommits = 16

func TestTurnCommits(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	before := h.Store.Commits()
	sub, _, err := h.RT.Engine.Accept(context.Background(), s.ID, "go", "k")
	if err != nil {
		t.Fatal(err)
	}
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s %s", got.Phase, got.Error)
	}
	if n := h.Store.Commits() - before; n > maxTurnCommits {
		t.Fatalf("one turn made %d commits, the budget is %d: batch the new write with its phase's others", n, maxTurnCommits)
	} else {
		t.Logf("one turn: %d commits", n)
	}
}
