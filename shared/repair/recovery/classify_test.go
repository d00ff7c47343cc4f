package recovery

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// stuck is a record that holds no lease and last moved two minutes ago.
func stuck(phase contracts.Phase, mod ...func(*contracts.Submission)) contracts.Submission {
	s := contracts.Submission{ID: "sub_1", SessionID: "ses_1", Phase: phase, Step: 1, Attempt: 1, Leaf: "nd_leaf", UpdatedAt: now.Add(-2 * time.Minute)}
	if phase == contracts.PhaseAccepted {
		s.Step, s.Attempt, s.Leaf = 0, 0, ""
	}
	for _, m := range mod {
		m(&s)
	}
	return s
}

// evidence is what the stores say about a healthy stuck record.
func evidence(mod ...func(*Evidence)) Evidence {
	ev := Evidence{Now: now, StuckAfter: time.Minute, MaxAttempts: 5, LeafExists: true}
	for _, m := range mod {
		m(&ev)
	}
	return ev
}

func calls(ids ...string) func(*contracts.Submission) {
	return func(s *contracts.Submission) {
		for _, id := range ids {
			s.ToolRequests = append(s.ToolRequests, contracts.ToolCall{ID: id, Name: "tool_" + id})
		}
	}
}

// tools builds tool evidence from "id=effect/record" specs: effect r
// (read-only), m (mutating) or ? (unknown); record - (none), s (started) or
// d (started and done).
func tools(specs ...string) func(*Evidence) {
	return func(ev *Evidence) {
		ev.ToolRecords, ev.ToolEffects = map[string]contracts.ToolRecord{}, map[string]contracts.Effect{}
		for _, sp := range specs {
			id, rest, _ := strings.Cut(sp, "=")
			effect, rec, _ := strings.Cut(rest, "/")
			switch effect {
			case "r":
				ev.ToolEffects[id] = contracts.ReadOnly
			case "m":
				ev.ToolEffects[id] = contracts.Mutating
			}
			switch rec {
			case "s":
				ev.ToolRecords[id] = contracts.ToolRecord{CallID: id, Started: true}
			case "d":
				ev.ToolRecords[id] = contracts.ToolRecord{CallID: id, Started: true, Result: &contracts.ToolResult{CallID: id, Content: "ok"}}
			}
		}
	}
}

func approval(callID string, d contracts.Decision, expires time.Time) func(*contracts.Submission) {
	return func(s *contracts.Submission) {
		s.Approvals = append(s.Approvals, contracts.Approval{ID: "apr_" + callID, CallID: callID, Decision: d, ExpiresAt: expires})
	}
}

func TestClassifySubmission(t *testing.T) {
	cases := []struct {
		name        string
		sub         contracts.Submission
		ev          Evidence
		state       State
		action      Action
		rerun       []string
		interrupted []string
		reason      string // prefix, when set
	}{
		{name: "committed", sub: stuck(contracts.PhaseCommitted), ev: evidence(),
			state: StateTerminal, action: ActionNone},
		{name: "failed, even with a dead letter", sub: stuck(contracts.PhaseFailed), ev: evidence(func(e *Evidence) { e.DeadLetter = &DeadLetter{Queue: "model"} }),
			state: StateTerminal, action: ActionNone},
		{name: "dead-lettered wake-up", sub: stuck(contracts.PhaseModel), ev: evidence(func(e *Evidence) {
			e.LeaseLive, e.DeadLetter = true, &DeadLetter{Queue: "commit", Step: 1, Phase: contracts.PhaseCommit}
		}), state: StatePoisoned, action: ActionFail, reason: "poison: commit message dead-lettered at step 1 COMMIT"},
		{name: "the model message of a recorded final answer dead-lettered: its commit failed, not poison", sub: stuck(contracts.PhaseCommit),
			ev:    evidence(func(e *Evidence) { e.DeadLetter = &DeadLetter{Queue: "model", Step: 1, Phase: contracts.PhaseModel} }),
			state: StateFinalNotCommitted, action: ActionEnqueueCommit},
		{name: "an older step's model message dead-lettered on a COMMIT record", sub: stuck(contracts.PhaseCommit),
			ev:    evidence(func(e *Evidence) { e.DeadLetter = &DeadLetter{Queue: "model", Step: 0, Phase: contracts.PhaseModel} }),
			state: StatePoisoned, action: ActionFail, reason: "poison: model message dead-lettered at step 0 MODEL"},
		{name: "live lease", sub: stuck(contracts.PhaseModel, func(s *contracts.Submission) { s.LeaseOwner, s.Attempt = "w", 9 }),
			ev: evidence(func(e *Evidence) { e.LeaseLive = true }), state: StateLeased, action: ActionWait},
		{name: "parked, approval timed out", sub: stuck(contracts.PhaseTools, calls("a"), approval("a", "", now)), ev: evidence(tools("a=m/-")),
			state: StateParkedExpired, action: ActionDenyExpired},
		{name: "parked with time left, long idle", sub: stuck(contracts.PhaseTools, calls("a"), approval("a", "", now.Add(time.Second))), ev: evidence(tools("a=m/-")),
			state: StateParked, action: ActionWait},
		{name: "recent progress without lease", sub: stuck(contracts.PhaseModel, func(s *contracts.Submission) { s.UpdatedAt = now.Add(-59 * time.Second) }),
			ev: evidence(), state: StateProgressing, action: ActionWait},
		{name: "attempts exhausted", sub: stuck(contracts.PhaseModel, func(s *contracts.Submission) { s.Step, s.Attempt, s.LeaseOwner = 0, 5, "dead" }),
			ev: evidence(), state: StateAttemptsExhausted, action: ActionFail, reason: "attempts_exhausted:MODEL step 0"},
		{name: "expired lease is stuck at once", sub: stuck(contracts.PhaseModel, func(s *contracts.Submission) {
			s.LeaseOwner, s.LeaseUntil, s.UpdatedAt, s.StreamKey = "dead", now.Add(-time.Second), now, "st_1"
		}), ev: evidence(), state: StateStreamIncomplete, action: ActionNewAttempt},
		{name: "leaf missing", sub: stuck(contracts.PhaseCommit), ev: evidence(func(e *Evidence) { e.LeafExists = false }),
			state: StateLeafMissing, action: ActionFail, reason: "leaf_missing:COMMIT step 1 node nd_leaf"},
		{name: "accepted behind a running turn", sub: stuck(contracts.PhaseAccepted),
			ev:    evidence(func(e *Evidence) { e.SessionActive, e.ActivePhase = "sub_0", contracts.PhaseTools }),
			state: StateWaitingBehindAnother, action: ActionWait},
		{name: "accepted, session free", sub: stuck(contracts.PhaseAccepted), ev: evidence(),
			state: StateNotStarted, action: ActionStartSession},
		{name: "accepted, session still names a failed turn", sub: stuck(contracts.PhaseAccepted),
			ev:    evidence(func(e *Evidence) { e.SessionActive, e.ActivePhase = "sub_0", contracts.PhaseFailed }),
			state: StateNotStarted, action: ActionStartSession},
		{name: "accepted, claimed but not begun", sub: stuck(contracts.PhaseAccepted), ev: evidence(func(e *Evidence) { e.SessionActive = "sub_1" }),
			state: StateNotStarted, action: ActionStartSession},
		{name: "model not started", sub: stuck(contracts.PhaseModel), ev: evidence(),
			state: StateModelNotStarted, action: ActionEnqueueModel},
		{name: "stream incomplete", sub: stuck(contracts.PhaseModel, func(s *contracts.Submission) { s.StreamKey = "st_1" }),
			ev: evidence(func(e *Evidence) { e.StreamChunks = 3 }), state: StateStreamIncomplete, action: ActionNewAttempt},
		{name: "stream complete, not recorded: no model call", sub: stuck(contracts.PhaseModel, func(s *contracts.Submission) { s.StreamKey = "st_1" }),
			ev:    evidence(func(e *Evidence) { e.StreamComplete, e.StreamChunks = true, 3 }),
			state: StateStreamCompleteNotRecorded, action: ActionEnqueueModel},
		{name: "tools pending", sub: stuck(contracts.PhaseTools, calls("a", "b")), ev: evidence(tools("a=m/-", "b=r/s")),
			state: StateToolsPending, action: ActionEnqueueTools, rerun: []string{"a", "b"}},
		{name: "tools partly done: only the missing read-only ones re-run", sub: stuck(contracts.PhaseTools, calls("a", "b", "c", "d")),
			ev:    evidence(tools("a=m/d", "b=r/s", "c=r/-", "d=r/d")),
			state: StateToolsPartlyDone, action: ActionEnqueueTools, rerun: []string{"b", "c"}},
		{name: "mutating started, no result: interrupted, never re-run", sub: stuck(contracts.PhaseTools, calls("a", "b", "c", "d", "e")),
			ev:    evidence(tools("a=m/d", "b=m/s", "c=r/s", "d=m/-", "e=r/d")),
			state: StateMutatingInterrupted, action: ActionEnqueueTools, rerun: []string{"c", "d"}, interrupted: []string{"b"}},
		{name: "unknown effect counts as mutating", sub: stuck(contracts.PhaseTools, calls("a")), ev: evidence(tools("a=?/s")),
			state: StateMutatingInterrupted, action: ActionEnqueueTools, interrupted: []string{"a"}},
		{name: "approver denied a started call: neither re-run nor interrupted",
			sub: stuck(contracts.PhaseTools, calls("a", "b"), approval("a", contracts.Deny, now), approval("b", contracts.Allow, now)),
			ev:  evidence(tools("a=m/s", "b=m/-")), state: StateToolsPending, action: ActionEnqueueTools, rerun: []string{"b"}},
		{name: "tools done, not advanced", sub: stuck(contracts.PhaseTools, calls("a", "b")), ev: evidence(tools("a=m/d", "b=r/d")),
			state: StateToolsDoneNotAdvanced, action: ActionEnqueueTools},
		{name: "final answer recorded, not committed", sub: stuck(contracts.PhaseCommit), ev: evidence(),
			state: StateFinalNotCommitted, action: ActionEnqueueCommit},
		{name: "unknown phase", sub: stuck("LATER"), ev: evidence(), state: StateUnknown, action: ActionNone},
		{name: "cancel requested, even under a live lease or attempts exhausted", sub: stuck(contracts.PhaseModel, func(s *contracts.Submission) {
			s.Cancel = &contracts.Cancel{By: "alice", At: now}
			s.Attempt, s.LeaseOwner, s.LeaseUntil = 9, "other", now.Add(time.Minute)
		}), ev: evidence(func(ev *Evidence) { ev.LeaseLive = true }), state: StateCancelRequested, action: ActionFinishCancel, reason: "cancel_requested: alice asked"},
		{name: "attempts since a retry's floor", sub: stuck(contracts.PhaseModel, func(s *contracts.Submission) {
			s.Attempt, s.AttemptFloor, s.StreamKey = 7, 5, "k"
		}), ev: evidence(), state: StateStreamIncomplete, action: ActionNewAttempt},
	}
	seen := map[State]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ClassifySubmission(c.sub, c.ev)
			if got.State != c.state || got.Action != c.action {
				t.Fatalf("got %s → %s (%s), want %s → %s", got.State, got.Action, got.Reason, c.state, c.action)
			}
			if !slices.Equal(got.Rerun, c.rerun) || !slices.Equal(got.Interrupted, c.interrupted) {
				t.Errorf("rerun %q interrupted %q, want %q %q", got.Rerun, got.Interrupted, c.rerun, c.interrupted)
			}
			if !strings.HasPrefix(got.Reason, string(c.state)) || !strings.HasPrefix(got.Reason, c.reason) {
				t.Errorf("reason %q: want it to start with %q and %q", got.Reason, c.state, c.reason)
			}
		})
		seen[c.state] = true
	}
	for s, a := range actions {
		if !seen[s] {
			t.Errorf("state %s (→ %s) has no row", s, a)
		}
		if a == "" {
			t.Errorf("state %s has no action", s)
		}
	}
}

// Classification does not depend on anything but its arguments.
func TestClassifySubmissionIsPure(t *testing.T) {
	sub := stuck(contracts.PhaseTools, calls("a", "b"))
	ev := evidence(tools("a=m/s", "b=r/-"))
	first := ClassifySubmission(sub, ev)
	for range 3 {
		got := ClassifySubmission(sub, ev)
		if got.State != first.State || got.Reason != first.Reason || !slices.Equal(got.Rerun, first.Rerun) || !slices.Equal(got.Interrupted, first.Interrupted) {
			t.Fatalf("%+v then %+v", first, got)
		}
	}
}
