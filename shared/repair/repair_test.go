package repair_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/repair"
)

const stuckAfter = time.Minute // the Repairer's default, which the harness keeps

func TestLostMessageRedrivenOnlyAfterStuckAfter(t *testing.T) {
	h := newHarness(t)
	sub := h.accept("scripted:plain")
	if sub = h.get(sub.ID); sub.Phase != contracts.PhaseModel {
		t.Fatalf("accepted submission is %s, want MODEL", sub.Phase)
	}
	if n := h.lose(contracts.QueueModel); n != 1 {
		t.Fatalf("lost %d messages, want 1", n)
	}

	for _, wait := range []time.Duration{0, stuckAfter - time.Second} {
		h.clock.Advance(wait)
		if rep := h.repair(); rep != (repair.Report{Scanned: 1}) {
			t.Fatalf("after %v: report %+v, want only Scanned 1", wait, rep)
		}
		if q := h.queued(contracts.QueueModel); len(q) != 0 {
			t.Fatalf("re-driven before StuckAfter: %+v", q)
		}
	}

	h.clock.Advance(2 * time.Second)
	if rep := h.repair(); rep != (repair.Report{Scanned: 1, Redriven: 1}) {
		t.Fatalf("report %+v, want Scanned 1 Redriven 1", rep)
	}
	// A second pass in the same window re-sends the same nonce: deduplicated.
	if rep := h.repair(); rep.Redriven != 1 {
		t.Fatalf("second pass report %+v", rep)
	}
	q := h.queued(contracts.QueueModel)
	if len(q) != 1 || q[0].SubmissionID != sub.ID || q[0].Phase != contracts.PhaseModel || !strings.HasPrefix(q[0].Nonce, "repair/") {
		t.Fatalf("want one repair wake-up for %s, got %+v", sub.ID, q)
	}

	h.drain()
	if got := h.get(sub.ID); got.Phase != contracts.PhaseCommitted || !strings.Contains(got.Result, "hello") {
		t.Fatalf("after re-drive: %s %q, want COMMITTED with the echo", got.Phase, got.Result)
	}
	if rep := h.repair(); rep != (repair.Report{}) {
		t.Fatalf("nothing is unfinished, report %+v", rep)
	}
}

func TestLeases(t *testing.T) {
	const ttl = 10 * time.Minute
	cases := []struct {
		name    string
		wait    time.Duration // after the lease was taken
		redrive bool
	}{
		{"expired lease is re-driven", ttl + time.Second, true},
		{"live lease past StuckAfter is left alone", ttl / 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			sub := h.accept("scripted:plain")
			h.lose(contracts.QueueModel)
			leased := h.set(sub.ID, func(s *contracts.Submission) {
				s.LeaseOwner, s.LeaseUntil, s.Attempt = "crashed-worker", h.clock.Now().Add(ttl), 1
			})
			h.clock.Advance(c.wait)
			rep := h.repair()
			if !c.redrive {
				if rep != (repair.Report{Scanned: 1}) {
					t.Fatalf("report %+v, want only Scanned 1", rep)
				}
				if q := h.queued(contracts.QueueModel); len(q) != 0 {
					t.Fatalf("live lease re-driven: %+v", q)
				}
				if got := h.get(sub.ID); got.Version != leased.Version || got.LeaseOwner != "crashed-worker" {
					t.Fatalf("leased record touched: %+v", got)
				}
				return
			}
			if rep != (repair.Report{Scanned: 1, Redriven: 1}) {
				t.Fatalf("report %+v, want Scanned 1 Redriven 1", rep)
			}
			h.drain()
			if got := h.get(sub.ID); got.Phase != contracts.PhaseCommitted {
				t.Fatalf("after re-drive: %s (%s)", got.Phase, got.Error)
			}
		})
	}
}

func TestAttemptsExhausted(t *testing.T) {
	cases := []struct {
		attempt int
		fail    bool
	}{
		{4, false}, // one attempt left: re-driven
		{5, true},  // turn.DefaultMaxAttempts used up
		{9, true},
	}
	for _, c := range cases {
		t.Run(strings.Repeat("I", c.attempt), func(t *testing.T) {
			h := newHarness(t)
			sub := h.accept("scripted:plain")
			h.lose(contracts.QueueModel)
			h.set(sub.ID, func(s *contracts.Submission) {
				s.LeaseOwner, s.LeaseUntil, s.Attempt = "crashed-worker", h.clock.Now().Add(-time.Second), c.attempt
			})
			rep := h.repair()
			got := h.get(sub.ID)
			if !c.fail {
				if rep != (repair.Report{Scanned: 1, Redriven: 1}) || got.Phase != contracts.PhaseModel {
					t.Fatalf("report %+v, phase %s: want re-driven", rep, got.Phase)
				}
				return
			}
			if rep != (repair.Report{Scanned: 1, Failed: 1}) {
				t.Fatalf("report %+v, want Scanned 1 Failed 1", rep)
			}
			if got.Phase != contracts.PhaseFailed || !strings.HasPrefix(got.Error, "attempts_exhausted:MODEL step 0") {
				t.Fatalf("got %s %q", got.Phase, got.Error)
			}
			if q := h.queued(contracts.QueueModel); len(q) != 0 {
				t.Fatalf("failed submission re-driven: %+v", q)
			}
			sess, err := h.store.GetSession(context.Background(), got.SessionID)
			if err != nil || sess.Active != "" {
				t.Fatalf("session not freed: active %q, %v", sess.Active, err)
			}
		})
	}
}

func TestPoison(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the submission the dead letter names and the phase it should end in.
		setup  func(h *harness) (contracts.Message, string, contracts.Phase)
		poison int
	}{
		{"live submission fails", func(h *harness) (contracts.Message, string, contracts.Phase) {
			sub := h.accept("scripted:plain")
			return wake(sub), sub.ID, contracts.PhaseFailed
		}, 1},
		{"committed submission is left alone", func(h *harness) (contracts.Message, string, contracts.Phase) {
			sub := h.accept("scripted:plain")
			h.drain()
			return wake(sub), sub.ID, contracts.PhaseCommitted
		}, 0},
		{"unknown submission is dropped", func(h *harness) (contracts.Message, string, contracts.Phase) {
			return contracts.Message{Kind: contracts.QueueModel, SessionID: "ses_gone", SubmissionID: "sub_gone", Phase: contracts.PhaseModel}, "", ""
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			m, id, want := c.setup(h)
			if err := h.store.Send(context.Background(), contracts.DLQ(contracts.QueueModel), m); err != nil {
				t.Fatal(err)
			}
			rep := h.repair()
			if rep.Poison != c.poison {
				t.Fatalf("report %+v, want Poison %d", rep, c.poison)
			}
			checkDLQEmpty(t, h)
			if id == "" {
				return
			}
			got := h.get(id)
			if got.Phase != want {
				t.Fatalf("phase %s, want %s", got.Phase, want)
			}
			if want == contracts.PhaseFailed && !strings.HasPrefix(got.Error, "poison:") {
				t.Fatalf("error %q, want poison:…", got.Error)
			}
		})
	}
}

// A message the queue itself dead-letters (received too often) ends its
// submission FAILED poison.
func TestPoisonFromQueueDeadLetter(t *testing.T) {
	h := newHarness(t)
	sub := h.accept("scripted:plain")
	ctx := context.Background()
	for i := range 5 { // sqlite.Options default MaxReceives
		ds, err := h.store.Receive(ctx, contracts.QueueModel, 1, time.Second)
		if err != nil || len(ds) != 1 {
			t.Fatalf("receive %d: %v, %v", i, ds, err)
		}
		h.clock.Advance(2 * time.Second)
	}
	if ds, err := h.store.Receive(ctx, contracts.QueueModel, 1, time.Second); err != nil || len(ds) != 0 {
		t.Fatalf("message not dead-lettered: %v, %v", ds, err)
	}
	if rep := h.repair(); rep.Poison != 1 {
		t.Fatalf("report %+v, want Poison 1", rep)
	}
	if got := h.get(sub.ID); got.Phase != contracts.PhaseFailed || !strings.Contains(got.Error, "poison: model message dead-lettered at step 0 MODEL") {
		t.Fatalf("got %s %q", got.Phase, got.Error)
	}
	checkDLQEmpty(t, h)
}

func wake(sub contracts.Submission) contracts.Message {
	return contracts.Message{Kind: contracts.QueueModel, SessionID: sub.SessionID, SubmissionID: sub.ID, Step: 0, Phase: contracts.PhaseModel, Version: 99}
}

// checkDLQEmpty checks the dead letters were deleted, not merely hidden.
func checkDLQEmpty(t *testing.T, h *harness) {
	t.Helper()
	h.clock.Advance(time.Hour)
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit} {
		if left := h.queued(contracts.DLQ(q)); len(left) != 0 {
			t.Fatalf("%s still holds %+v", contracts.DLQ(q), left)
		}
	}
}

// parked returns a submission parked on an approval that expires after wait.
func parked(h *harness, wait time.Duration) contracts.Submission {
	h.t.Helper()
	s := h.session(contracts.SessionSpec{Model: "scripted:approval", Policy: contracts.Policy{
		Tools: map[string]contracts.Decision{"bash": contracts.Ask}, ApprovalTimeoutSeconds: int(wait / time.Second),
	}})
	sub, _, err := h.rt.Engine.Accept(context.Background(), s.ID, "do it", "")
	if err != nil {
		h.t.Fatal(err)
	}
	h.drain()
	got := h.get(sub.ID)
	if got.Phase != contracts.PhaseTools || len(got.Approvals) != 1 || got.Approvals[0].Decision != "" {
		h.t.Fatalf("not parked: %s %+v", got.Phase, got.Approvals)
	}
	return got
}

func TestParkedApproval(t *testing.T) {
	h := newHarness(t)
	sub := parked(h, 10*time.Minute)

	h.clock.Advance(5 * time.Minute) // past StuckAfter, approval time left
	if rep := h.repair(); rep != (repair.Report{Scanned: 1}) {
		t.Fatalf("report %+v, want only Scanned 1", rep)
	}
	if got := h.get(sub.ID); got.Version != sub.Version {
		t.Fatalf("parked record touched: %+v", got)
	}
	if q := h.queued(contracts.QueueTools); len(q) != 0 {
		t.Fatalf("parked turn re-driven: %+v", q)
	}

	h.clock.Advance(5 * time.Minute)
	if rep := h.repair(); rep != (repair.Report{Scanned: 1, Expired: 1}) {
		t.Fatalf("report %+v, want Scanned 1 Expired 1", rep)
	}
	got := h.get(sub.ID)
	if a := got.Approvals[0]; a.Decision != contracts.Deny || a.Reason != "approval timed out" {
		t.Fatalf("approval %+v, want denied on timeout", a)
	}
	if q := h.queued(contracts.QueueTools); len(q) != 1 || q[0].SubmissionID != sub.ID {
		t.Fatalf("tools not woken: %+v", q)
	}
	h.drain()
	if got := h.get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("after expiry: %s (%s)", got.Phase, got.Error)
	}
	if _, err := os.Stat(filepath.Join(h.sandbox, sub.SessionID, "approved.txt")); !os.IsNotExist(err) {
		t.Fatalf("the denied command ran: %v", err)
	}
}

func TestBreakForeignLeases(t *testing.T) {
	h := newHarness(t)
	until := h.clock.Now().Add(time.Hour)
	lease := func(owner string) func(*contracts.Submission) {
		return func(s *contracts.Submission) { s.LeaseOwner, s.LeaseUntil = owner, until }
	}
	done := h.accept("scripted:plain")
	h.drain()
	done = h.set(done.ID, lease("dead-boot")) // terminal: not in the repair index
	own := h.set(h.accept("scripted:plain").ID, lease("test"))
	dead := h.set(h.accept("scripted:plain").ID, lease("dead-boot"))
	free := h.get(h.accept("scripted:plain").ID)

	n, err := h.rt.Repair.BreakForeignLeases(context.Background(), "test")
	if err != nil || n != 1 {
		t.Fatalf("BreakForeignLeases = %d, %v; want 1", n, err)
	}
	if got := h.get(dead.ID); got.LeaseOwner != "" || !got.LeaseUntil.IsZero() || got.Version != dead.Version+1 {
		t.Errorf("foreign lease kept: %+v", got)
	}
	for _, keep := range []contracts.Submission{own, free, done} {
		if got := h.get(keep.ID); got.Version != keep.Version || got.LeaseOwner != keep.LeaseOwner {
			t.Errorf("%s touched: owner %q version %d (was %q %d)", keep.ID, got.LeaseOwner, got.Version, keep.LeaseOwner, keep.Version)
		}
	}
}

// One pass over a mix of states counts each outcome once.
func TestReportCounters(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	expiring := parked(h, time.Minute)
	lost := h.accept("scripted:plain")
	exhausted := h.accept("scripted:plain")
	live := h.accept("scripted:plain")
	poisoned := h.accept("scripted:plain")
	idle := h.session(contracts.SessionSpec{Model: "scripted:plain"})
	now := h.clock.Now()
	waiting, _, err := h.store.CreateSubmission(ctx, contracts.Submission{ID: "sub_waiting", SessionID: idle.ID, Prompt: "hi", Phase: contracts.PhaseAccepted, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	h.lose(contracts.QueueModel)
	h.clock.Advance(2 * time.Minute)
	h.set(exhausted.ID, func(s *contracts.Submission) { s.LeaseOwner, s.LeaseUntil, s.Attempt = "x", h.clock.Now(), 5 })
	h.set(live.ID, func(s *contracts.Submission) { s.LeaseOwner, s.LeaseUntil = "x", h.clock.Now().Add(time.Hour) })
	if err := h.store.Send(ctx, contracts.DLQ(contracts.QueueCommit), wake(poisoned)); err != nil {
		t.Fatal(err)
	}

	want := repair.Report{Scanned: 5, Redriven: 1, Started: 1, Failed: 1, Expired: 1, Poison: 1}
	if rep := h.repair(); rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	for id, phase := range map[string]contracts.Phase{
		expiring.ID: contracts.PhaseTools, lost.ID: contracts.PhaseModel, exhausted.ID: contracts.PhaseFailed,
		live.ID: contracts.PhaseModel, poisoned.ID: contracts.PhaseFailed, waiting.ID: contracts.PhaseModel,
	} {
		if got := h.get(id); got.Phase != phase {
			t.Errorf("%s: %s, want %s", id, got.Phase, phase)
		}
	}
	if got := h.get(poisoned.ID); !strings.HasPrefix(got.Error, "poison: commit message") {
		t.Errorf("poison reason %q", got.Error)
	}
}
