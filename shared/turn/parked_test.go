package turn_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// Time parked for an approval decision is not run time: with a wall limit
// of a minute and a decision given after two hours (within the approval's
// timeout), the turn resumes and commits; its parked time is recorded.
func TestParkedTimeIsNotRunTime(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:approval",
		Limits: contracts.Limits{MaxWallSeconds: 60},
		Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}, ApprovalTimeoutSeconds: 3 * 3600}})
	sub := h.Submit(s.ID, "go")
	h.Drain()
	parked := h.Get(sub.ID)
	if parked.Phase != contracts.PhaseTools || parked.ParkedAt.IsZero() {
		t.Fatalf("not parked with ParkedAt: %+v", parked)
	}
	h.Clock.Advance(2 * time.Hour)
	if _, err := h.RT.Repair.Run(context.Background()); err != nil { // nothing to expire, nothing to fail
		t.Fatal(err)
	}
	pending, err := h.RT.Engine.Pending(context.Background(), s.ID)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	if _, err := h.RT.Engine.Decide(context.Background(), s.ID, pending[0].ID, contracts.Allow, ""); err != nil {
		t.Fatal(err)
	}
	h.Drain()
	done := h.Get(sub.ID)
	if done.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s (%s), want COMMITTED: parked time counted as run time", done.Phase, done.Error)
	}
	if h.File(s.ID, "approved.txt") != "approved\n" {
		t.Fatal("the approved tool did not run")
	}
	if got := time.Duration(done.ParkedNanos); got != 2*time.Hour || !done.ParkedAt.IsZero() {
		t.Fatalf("parked %v (ParkedAt %v), want 2h folded in", got, done.ParkedAt)
	}
}

// Working time still counts: a turn whose own work passes the wall limit
// fails limit_tripped:wall_time.
func TestWorkingTimeStillTripsTheWallLimit(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain", Limits: contracts.Limits{MaxWallSeconds: 60}})
	sub := h.Submit(s.ID, "go")
	h.Set(sub.ID, func(n *contracts.Submission) { n.StartedAt = h.Clock.Now() })
	h.Clock.Advance(61 * time.Second)
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseFailed || got.Error != "limit_tripped:wall_time" {
		t.Fatalf("%s %q, want FAILED limit_tripped:wall_time", got.Phase, got.Error)
	}
}
