package turn_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// TestChainedAdvanceGivesBackALeaseItCannotHandOver: the model phase's
// advance to tools carries the tools phase's lease when its send will be
// handed to this worker. When the session's group already has a message
// waiting on the tools queue, the send is not handed over: the lease must
// be given back in the same batch, so the worker that receives the message
// takes it at once (attempt 1, not 2), rather than after the lease's TTL.
func TestChainedAdvanceGivesBackALeaseItCannotHandOver(t *testing.T) {
	ctx := context.Background()
	h := enginetest.New(t)
	h.RT.Engine.StartedAfter = time.Hour
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	// A message of the session's group already waits on the tools queue
	// (a stray re-drive for a submission that does not exist).
	if err := h.Store.Send(ctx, contracts.QueueTools, contracts.Message{Kind: contracts.QueueTools, SessionID: s.ID, SubmissionID: "sub_gone", Phase: contracts.PhaseTools}); err != nil {
		t.Fatal(err)
	}
	sub, _, err := h.RT.Engine.Accept(ctx, s.ID, "go", "k")
	if err != nil {
		t.Fatal(err)
	}
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s %s: the turn did not finish behind the waiting message", got.Phase, got.Error)
	}
	evs, err := h.Store.ListEvents(ctx, sub.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == contracts.EventStreamDiscarded {
			t.Errorf("an attempt was replaced: %s", e.Text)
		}
	}
}
