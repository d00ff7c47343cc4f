package repair_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/repair"
	"github.com/cairnrun/cairn/shared/repair/recovery"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

const stuckAfter = repair.DefaultStuckAfter       // the Repairer's default for submissions, which the harness keeps
const runStuckAfter = repair.DefaultRunStuckAfter // and for workflow runs

func TestLostMessageRedrivenOnlyAfterStuckAfter(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	sub := h.Accept("scripted:plain")
	if sub = h.Get(sub.ID); sub.Phase != contracts.PhaseModel {
		t.Fatalf("accepted submission is %s, want MODEL", sub.Phase)
	}
	if n := h.Lose(contracts.QueueModel); n != 1 {
		t.Fatalf("lost %d messages, want 1", n)
	}

	for _, wait := range []time.Duration{0, stuckAfter - time.Second} {
		h.Clock.Advance(wait)
		if rep := h.Repair(); counts(rep) != counts(repair.Report{Scanned: 1}) {
			t.Fatalf("after %v: report %+v, want only Scanned 1", wait, rep)
		}
		if q := h.Queued(contracts.QueueModel); len(q) != 0 {
			t.Fatalf("re-driven before StuckAfter: %+v", q)
		}
	}

	h.Clock.Advance(2 * time.Second)
	if rep := h.Repair(); counts(rep) != counts(repair.Report{Scanned: 1, Redriven: 1}) {
		t.Fatalf("report %+v, want Scanned 1 Redriven 1", rep)
	}
	// A second pass in the same window re-sends the same nonce: deduplicated.
	if rep := h.Repair(); rep.Redriven != 1 {
		t.Fatalf("second pass report %+v", rep)
	}
	q := h.Queued(contracts.QueueModel)
	if len(q) != 1 || q[0].SubmissionID != sub.ID || q[0].Phase != contracts.PhaseModel || !strings.HasPrefix(q[0].Nonce, "repair/") {
		t.Fatalf("want one repair wake-up for %s, got %+v", sub.ID, q)
	}

	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted || !strings.Contains(got.Result, "hello") {
		t.Fatalf("after re-drive: %s %q, want COMMITTED with the echo", got.Phase, got.Result)
	}
	if rep := h.Repair(); counts(rep) != counts(repair.Report{}) {
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
			h := enginetest.New(t)
			h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
			sub := h.Accept("scripted:plain")
			h.Lose(contracts.QueueModel)
			leased := h.Set(sub.ID, func(s *contracts.Submission) {
				s.LeaseOwner, s.LeaseUntil, s.Attempt = "crashed-worker", h.Clock.Now().Add(ttl), 1
			})
			h.Clock.Advance(c.wait)
			rep := h.Repair()
			if !c.redrive {
				if counts(rep) != counts(repair.Report{Scanned: 1}) {
					t.Fatalf("report %+v, want only Scanned 1", rep)
				}
				if q := h.Queued(contracts.QueueModel); len(q) != 0 {
					t.Fatalf("live lease re-driven: %+v", q)
				}
				if got := h.Get(sub.ID); got.Version != leased.Version || got.LeaseOwner != "crashed-worker" {
					t.Fatalf("leased record touched: %+v", got)
				}
				return
			}
			if counts(rep) != counts(repair.Report{Scanned: 1, Redriven: 1}) {
				t.Fatalf("report %+v, want Scanned 1 Redriven 1", rep)
			}
			h.Drain()
			if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
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
			h := enginetest.New(t)
			h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
			sub := h.Accept("scripted:plain")
			h.Lose(contracts.QueueModel)
			h.Set(sub.ID, func(s *contracts.Submission) {
				s.LeaseOwner, s.LeaseUntil, s.Attempt = "crashed-worker", h.Clock.Now().Add(-time.Second), c.attempt
			})
			rep := h.Repair()
			got := h.Get(sub.ID)
			if !c.fail {
				if counts(rep) != counts(repair.Report{Scanned: 1, Redriven: 1}) || got.Phase != contracts.PhaseModel {
					t.Fatalf("report %+v, phase %s: want re-driven", rep, got.Phase)
				}
				return
			}
			if counts(rep) != counts(repair.Report{Scanned: 1, Failed: 1}) {
				t.Fatalf("report %+v, want Scanned 1 Failed 1", rep)
			}
			if got.Phase != contracts.PhaseFailed || !strings.HasPrefix(got.Error, "attempts_exhausted:MODEL step 0") {
				t.Fatalf("got %s %q", got.Phase, got.Error)
			}
			if q := h.Queued(contracts.QueueModel); len(q) != 0 {
				t.Fatalf("failed submission re-driven: %+v", q)
			}
			sess, err := h.Store.GetSession(context.Background(), got.SessionID)
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
		setup  func(h *enginetest.Harness) (contracts.Message, string, contracts.Phase)
		poison int
	}{
		{"live submission fails", func(h *enginetest.Harness) (contracts.Message, string, contracts.Phase) {
			sub := h.Accept("scripted:plain")
			return wake(sub), sub.ID, contracts.PhaseFailed
		}, 1},
		{"committed submission is left alone", func(h *enginetest.Harness) (contracts.Message, string, contracts.Phase) {
			sub := h.Accept("scripted:plain")
			h.Drain()
			return wake(sub), sub.ID, contracts.PhaseCommitted
		}, 0},
		{"unknown submission is dropped", func(h *enginetest.Harness) (contracts.Message, string, contracts.Phase) {
			return contracts.Message{Kind: contracts.QueueModel, SessionID: "ses_gone", SubmissionID: "sub_gone", Phase: contracts.PhaseModel}, "", ""
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := enginetest.New(t)
			m, id, want := c.setup(h)
			if err := h.Store.Send(context.Background(), contracts.DLQ(contracts.QueueModel), m); err != nil {
				t.Fatal(err)
			}
			rep := h.Repair()
			if rep.Poison != c.poison {
				t.Fatalf("report %+v, want Poison %d", rep, c.poison)
			}
			checkDLQEmpty(t, h)
			if id == "" {
				return
			}
			got := h.Get(id)
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
	h := enginetest.New(t)
	sub := h.Accept("scripted:plain")
	ctx := context.Background()
	for i := range 5 { // sqlite.Options default MaxReceives
		ds, err := h.Store.Receive(ctx, contracts.QueueModel, 1, time.Second)
		if err != nil || len(ds) != 1 {
			t.Fatalf("receive %d: %v, %v", i, ds, err)
		}
		h.Clock.Advance(2 * time.Second)
	}
	if ds, err := h.Store.Receive(ctx, contracts.QueueModel, 1, time.Second); err != nil || len(ds) != 0 {
		t.Fatalf("message not dead-lettered: %v, %v", ds, err)
	}
	if rep := h.Repair(); rep.Poison != 1 {
		t.Fatalf("report %+v, want Poison 1", rep)
	}
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseFailed || !strings.Contains(got.Error, "poison: model message dead-lettered at step 0 MODEL") {
		t.Fatalf("got %s %q", got.Phase, got.Error)
	}
	checkDLQEmpty(t, h)
}

// counters are a Report without States, comparable with !=.
type counters struct{ Scanned, Redriven, Started, Failed, Expired, Poison int }

func counts(r repair.Report) counters {
	return counters{r.Scanned, r.Redriven, r.Started, r.Failed, r.Expired, r.Poison}
}

func wake(sub contracts.Submission) contracts.Message {
	return contracts.Message{Kind: contracts.QueueModel, SessionID: sub.SessionID, SubmissionID: sub.ID, Step: 0, Phase: contracts.PhaseModel, Version: 99}
}

// checkDLQEmpty checks the dead letters were deleted, not merely hidden.
func checkDLQEmpty(t *testing.T, h *enginetest.Harness) {
	t.Helper()
	h.Clock.Advance(time.Hour)
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit} {
		if left := h.Queued(contracts.DLQ(q)); len(left) != 0 {
			t.Fatalf("%s still holds %+v", contracts.DLQ(q), left)
		}
	}
}

// parked returns a submission parked on an approval that expires after wait.
func parked(t *testing.T, h *enginetest.Harness, wait time.Duration) contracts.Submission {
	t.Helper()
	s := h.Session(contracts.SessionSpec{Model: "scripted:approval", Policy: contracts.Policy{
		Tools: map[string]contracts.Decision{"bash": contracts.Ask}, ApprovalTimeoutSeconds: int(wait / time.Second),
	}})
	sub := h.Submit(s.ID, "do it")
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseTools || len(got.Approvals) != 1 || got.Approvals[0].Decision != "" {
		t.Fatalf("not parked: %s %+v", got.Phase, got.Approvals)
	}
	return got
}

func TestParkedApproval(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	sub := parked(t, h, 10*time.Minute)

	h.Clock.Advance(5 * time.Minute) // past StuckAfter, approval time left
	if rep := h.Repair(); counts(rep) != counts(repair.Report{Scanned: 1}) {
		t.Fatalf("report %+v, want only Scanned 1", rep)
	}
	if got := h.Get(sub.ID); got.Version != sub.Version {
		t.Fatalf("parked record touched: %+v", got)
	}
	if q := h.Queued(contracts.QueueTools); len(q) != 0 {
		t.Fatalf("parked turn re-driven: %+v", q)
	}

	h.Clock.Advance(5 * time.Minute)
	if rep := h.Repair(); counts(rep) != counts(repair.Report{Scanned: 1, Expired: 1}) {
		t.Fatalf("report %+v, want Scanned 1 Expired 1", rep)
	}
	got := h.Get(sub.ID)
	if a := got.Approvals[0]; a.Decision != contracts.Deny || a.Reason != "approval timed out" {
		t.Fatalf("approval %+v, want denied on timeout", a)
	}
	if q := h.Queued(contracts.QueueTools); len(q) != 1 || q[0].SubmissionID != sub.ID {
		t.Fatalf("tools not woken: %+v", q)
	}
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("after expiry: %s (%s)", got.Phase, got.Error)
	}
	if _, err := os.Stat(filepath.Join(h.SandboxDir, sub.SessionID, "approved.txt")); !os.IsNotExist(err) {
		t.Fatalf("the denied command ran: %v", err)
	}
}

func TestBreakForeignLeases(t *testing.T) {
	h := enginetest.New(t)
	until := h.Clock.Now().Add(time.Hour)
	lease := func(owner string) func(*contracts.Submission) {
		return func(s *contracts.Submission) { s.LeaseOwner, s.LeaseUntil = owner, until }
	}
	done := h.Accept("scripted:plain")
	h.Drain()
	done = h.Set(done.ID, lease("dead-boot")) // terminal: not in the repair index
	own := h.Set(h.Accept("scripted:plain").ID, lease(enginetest.Owner))
	dead := h.Set(h.Accept("scripted:plain").ID, lease("dead-boot"))
	free := h.Get(h.Accept("scripted:plain").ID)

	n, err := h.RT.Repair.BreakForeignLeases(context.Background(), enginetest.Owner)
	if err != nil || n != 1 {
		t.Fatalf("BreakForeignLeases = %d, %v; want 1", n, err)
	}
	if got := h.Get(dead.ID); got.LeaseOwner != "" || !got.LeaseUntil.IsZero() || got.Version != dead.Version+1 {
		t.Errorf("foreign lease kept: %+v", got)
	}
	for _, keep := range []contracts.Submission{own, free, done} {
		if got := h.Get(keep.ID); got.Version != keep.Version || got.LeaseOwner != keep.LeaseOwner {
			t.Errorf("%s touched: owner %q version %d (was %q %d)", keep.ID, got.LeaseOwner, got.Version, keep.LeaseOwner, keep.Version)
		}
	}
}

// One pass over a mix of states counts each outcome once.
func TestReportCounters(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	ctx := context.Background()
	expiring := parked(t, h, time.Minute)
	lost := h.Accept("scripted:plain")
	exhausted := h.Accept("scripted:plain")
	live := h.Accept("scripted:plain")
	poisoned := h.Accept("scripted:plain")
	idle := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	now := h.Clock.Now()
	waiting, _, err := h.Store.CreateSubmission(ctx, contracts.Submission{ID: "sub_waiting", SessionID: idle.ID, Prompt: "hi", Phase: contracts.PhaseAccepted, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	h.Lose(contracts.QueueModel)
	h.Clock.Advance(2 * time.Minute)
	h.Set(exhausted.ID, func(s *contracts.Submission) { s.LeaseOwner, s.LeaseUntil, s.Attempt = "x", h.Clock.Now(), 5 })
	h.Set(live.ID, func(s *contracts.Submission) { s.LeaseOwner, s.LeaseUntil = "x", h.Clock.Now().Add(time.Hour) })
	if err := h.Store.Send(ctx, contracts.DLQ(contracts.QueueCommit), wake(poisoned)); err != nil {
		t.Fatal(err)
	}

	want := repair.Report{Scanned: 5, Redriven: 1, Started: 1, Failed: 1, Expired: 1, Poison: 1}
	rep := h.Repair()
	if counts(rep) != counts(want) {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	states := map[recovery.State]int{
		recovery.StateParkedExpired: 1, recovery.StateModelNotStarted: 1, recovery.StateAttemptsExhausted: 1,
		recovery.StateLeased: 1, recovery.StatePoisoned: 1, recovery.StateNotStarted: 1,
	}
	if !maps.Equal(rep.States, states) {
		t.Fatalf("states %v, want %v", rep.States, states)
	}
	for id, phase := range map[string]contracts.Phase{
		expiring.ID: contracts.PhaseTools, lost.ID: contracts.PhaseModel, exhausted.ID: contracts.PhaseFailed,
		live.ID: contracts.PhaseModel, poisoned.ID: contracts.PhaseFailed, waiting.ID: contracts.PhaseModel,
	} {
		if got := h.Get(id); got.Phase != phase {
			t.Errorf("%s: %s, want %s", id, got.Phase, phase)
		}
	}
	if got := h.Get(poisoned.ID); !strings.HasPrefix(got.Error, "poison: commit message") {
		t.Errorf("poison reason %q", got.Error)
	}
}
