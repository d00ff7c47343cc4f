package turn_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

func eventsOf(t *testing.T, h *enginetest.Harness, subID, typ string) []contracts.Event {
	t.Helper()
	evs, err := h.RT.Ports.Events.ListEvents(context.Background(), subID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []contracts.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func askBash(h *enginetest.Harness, timeout int) contracts.Session {
	return h.Session(contracts.SessionSpec{Model: "scripted:approval",
		Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}, ApprovalTimeoutSeconds: timeout}})
}

// A committed turn's record keeps its decided approvals — decision, reason,
// who and when, and the step — and its events hold one approval_decided,
// however often the same decision is given.
func TestDecidedApprovalsStayInTheRecord(t *testing.T) {
	h := enginetest.New(t)
	s := askBash(h, 0)
	sub := h.Submit(s.ID, "go")
	h.Drain()
	pending, err := h.RT.Engine.Pending(context.Background(), s.ID)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	h.Clock.Advance(90 * time.Second)
	decidedAt := h.Clock.Now()
	ctx := contracts.WithPrincipal(context.Background(), contracts.Principal{Name: "alice"})
	for range 2 {
		if _, err := h.RT.Engine.Decide(ctx, s.ID, pending[0].ID, contracts.Allow, "looks safe"); err != nil {
			t.Fatal(err)
		}
	}
	h.Drain()
	done := h.Get(sub.ID)
	if done.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s (%s)", done.Phase, done.Error)
	}
	if len(done.Decided) != 1 {
		t.Fatalf("decided = %+v, want the one approval", done.Decided)
	}
	a := done.Decided[0]
	if a.ID != pending[0].ID || a.Decision != contracts.Allow || a.Reason != "looks safe" || a.DecidedBy != "alice" ||
		!a.DecidedAt.Equal(decidedAt) || a.Step != 0 || a.Tool != "bash" || len(a.Input) == 0 {
		t.Fatalf("decided approval %+v", a)
	}
	evs := eventsOf(t, h, sub.ID, contracts.EventApprovalDecided)
	if len(evs) != 1 || evs[0].ApprovalID != a.ID || evs[0].Text != "allow by alice: looks safe" {
		t.Fatalf("approval_decided events %+v", evs)
	}
}

// An approval that expires undecided is denied by the timeout, and that
// is what the record and the events say.
func TestAnExpiredApprovalIsDecidedByTheTimeout(t *testing.T) {
	h := enginetest.New(t)
	s := askBash(h, 60)
	sub := h.Submit(s.ID, "go")
	h.Drain()
	h.Clock.Advance(61 * time.Second)
	h.Repair()
	h.Drain()
	done := h.Get(sub.ID)
	if !done.Phase.Terminal() || len(done.Decided) != 1 {
		t.Fatalf("phase %s, decided %+v", done.Phase, done.Decided)
	}
	if a := done.Decided[0]; a.Decision != contracts.Deny || a.DecidedBy != contracts.ApprovalTimeout || a.DecidedAt.IsZero() {
		t.Fatalf("decided approval %+v", a)
	}
	evs := eventsOf(t, h, sub.ID, contracts.EventApprovalDecided)
	if len(evs) != 1 || evs[0].Text != "deny by "+contracts.ApprovalTimeout+": approval timed out" {
		t.Fatalf("approval_decided events %+v", evs)
	}
}

// What repair does to a turn is in the turn's events: a re-drive of a lost
// message is a repaired event naming the action and why.
func TestRepairActionsAreEvents(t *testing.T) {
	h := enginetest.New(t)
	sub := h.Accept("scripted:plain")
	if n := h.Lose(contracts.QueueModel); n != 1 {
		t.Fatalf("lost %d messages", n)
	}
	h.Clock.Advance(turn.DefaultLeaseTTL * 2)
	h.Repair()
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	evs := eventsOf(t, h, sub.ID, contracts.EventRepaired)
	if len(evs) != 1 || evs[0].Text == "" || evs[0].Step != 0 {
		t.Fatalf("repaired events %+v, want one naming the re-drive", evs)
	}
	t.Logf("repaired: %s", evs[0].Text)
}
