package recovery

import (
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// State names where an unfinished submission stopped (see the table in the
// package documentation). A FAILED reason starts with its state.
type State string

const (
	StateTerminal                  State = "terminal"
	StatePoisoned                  State = "poison"
	StateLeased                    State = "leased"
	StateParkedExpired             State = "parked_expired"
	StateParked                    State = "parked"
	StateProgressing               State = "progressing"
	StateAttemptsExhausted         State = "attempts_exhausted"
	StateLeafMissing               State = "leaf_missing"
	StateWaitingBehindAnother      State = "waiting_behind_another"
	StateNotStarted                State = "not_started"
	StateModelNotStarted           State = "model_not_started"
	StateStreamIncomplete          State = "stream_incomplete"
	StateStreamCompleteNotRecorded State = "stream_complete_not_recorded"
	StateToolsPending              State = "tools_pending"
	StateToolsPartlyDone           State = "tools_partly_done"
	StateMutatingInterrupted       State = "mutating_interrupted"
	StateToolsDoneNotAdvanced      State = "tools_done_not_advanced"
	StateFinalNotCommitted         State = "final_not_committed"
	StateUnknown                   State = "unknown"
	StateCancelRequested           State = "cancel_requested"
)

// Action is the one recovery step a state calls for.
type Action string

const (
	ActionNone          Action = "none"           // nothing to do, ever
	ActionWait          Action = "wait"           // nothing to do now; someone or something else moves it
	ActionFail          Action = "fail"           // end FAILED with Classification.Reason
	ActionDenyExpired   Action = "deny_expired"   // deny the approvals past their expiry, wake the tools phase
	ActionStartSession  Action = "start_session"  // start the session's next submission (StartNext)
	ActionEnqueueModel  Action = "enqueue_model"  // wake the model phase
	ActionNewAttempt    Action = "new_attempt"    // wake the model phase, which leases a new attempt and a new stream key
	ActionEnqueueTools  Action = "enqueue_tools"  // wake the tools phase
	ActionEnqueueCommit Action = "enqueue_commit" // wake the commit phase
	ActionFinishCancel  Action = "finish_cancel"  // end the turn CANCELLED (its asker stopped before it did)
)

// actions maps every state to its one action.
var actions = map[State]Action{
	StateTerminal:                  ActionNone,
	StatePoisoned:                  ActionFail,
	StateLeased:                    ActionWait,
	StateParkedExpired:             ActionDenyExpired,
	StateParked:                    ActionWait,
	StateProgressing:               ActionWait,
	StateAttemptsExhausted:         ActionFail,
	StateLeafMissing:               ActionFail,
	StateWaitingBehindAnother:      ActionWait,
	StateNotStarted:                ActionStartSession,
	StateModelNotStarted:           ActionEnqueueModel,
	StateStreamIncomplete:          ActionNewAttempt,
	StateStreamCompleteNotRecorded: ActionEnqueueModel,
	StateToolsPending:              ActionEnqueueTools,
	StateToolsPartlyDone:           ActionEnqueueTools,
	StateMutatingInterrupted:       ActionEnqueueTools,
	StateToolsDoneNotAdvanced:      ActionEnqueueTools,
	StateFinalNotCommitted:         ActionEnqueueCommit,
	StateUnknown:                   ActionNone,
	StateCancelRequested:           ActionFinishCancel,
}

// Action returns the state's recovery action.
func (s State) Action() Action { return actions[s] }

// Classification is the outcome of ClassifySubmission.
type Classification struct {
	State  State
	Action Action
	// Reason says why, in words; for ActionFail it is the FAILED reason
	// and starts with the state.
	Reason string
	// Rerun lists, in request order, the calls without a result the tools
	// phase will handle again (run, unless the policy denies them now).
	Rerun []string
	// Interrupted lists the mutating calls that started and left no
	// result: they are never run again. The tools phase first asks the
	// sandbox's call ledger (contracts.CallLedger): a call the sandbox ran
	// or is running gets its recorded outcome; only one it cannot vouch
	// for is reported to the model as "interrupted — outcome unknown".
	Interrupted []string
}

func classified(s State, reason string, args ...any) Classification {
	return Classification{State: s, Action: s.Action(), Reason: string(s) + ": " + fmt.Sprintf(reason, args...)}
}

// commitsItself reports whether d, a dead-lettered message of sub, is a
// model message of the step whose final answer sub holds in COMMIT: the
// model phase commits that answer itself (turn.commitFinal) and retries a
// failed commit through its own message's redeliveries, so running out of
// them is the commit's failure, not a poison turn's — the commit phase
// gets its own tries (StateFinalNotCommitted).
func commitsItself(sub contracts.Submission, d *DeadLetter) bool {
	return sub.Phase == contracts.PhaseCommit && d.Queue == contracts.QueueModel && d.Step == sub.Step
}

// ClassifySubmission names the state of sub from the evidence and the one
// action that resumes it. It is pure: no I/O, no clock.
func ClassifySubmission(sub contracts.Submission, ev Evidence) Classification {
	switch {
	case sub.Phase.Terminal():
		return classified(StateTerminal, "%s", sub.Phase)
	case sub.Cancel != nil:
		return classified(StateCancelRequested, "%s asked at %s", sub.Cancel.By, sub.Cancel.At.Format("15:04:05"))
	case ev.DeadLetter != nil && !commitsItself(sub, ev.DeadLetter):
		d := ev.DeadLetter
		c := classified(StatePoisoned, "")
		c.Reason = fmt.Sprintf("poison: %s message dead-lettered at step %d %s", d.Queue, d.Step, d.Phase)
		return c
	case ev.LeaseLive:
		return classified(StateLeased, "%s holds it until %s", sub.LeaseOwner, sub.LeaseUntil.Format("15:04:05"))
	}
	if sub.Phase == contracts.PhaseTools {
		pending, expired := 0, 0
		for _, a := range sub.Approvals {
			if a.Decision == "" {
				pending++
				if !ev.Now.Before(a.ExpiresAt) {
					expired++
				}
			}
		}
		if expired > 0 {
			return classified(StateParkedExpired, "%d of %d pending approvals timed out at step %d", expired, pending, sub.Step)
		}
		if pending > 0 {
			return classified(StateParked, "%d approvals pending at step %d", pending, sub.Step)
		}
	}
	if sub.LeaseOwner == "" && ev.Now.Sub(sub.UpdatedAt) < ev.StuckAfter {
		return classified(StateProgressing, "%s step %d advanced %s ago", sub.Phase, sub.Step, ev.Now.Sub(sub.UpdatedAt))
	}
	if ev.MaxAttempts > 0 && sub.Attempt-sub.AttemptFloor >= ev.MaxAttempts {
		c := classified(StateAttemptsExhausted, "")
		c.Reason = fmt.Sprintf("attempts_exhausted:%s step %d", sub.Phase, sub.Step)
		return c
	}
	if sub.Phase != contracts.PhaseAccepted && sub.Leaf != "" && !ev.LeafExists {
		c := classified(StateLeafMissing, "")
		c.Reason = fmt.Sprintf("leaf_missing:%s step %d node %s is not in the transcript", sub.Phase, sub.Step, sub.Leaf)
		return c
	}
	switch sub.Phase {
	case contracts.PhaseAccepted:
		if ev.SessionActive != "" && ev.SessionActive != sub.ID && ev.ActivePhase != "" &&
			ev.ActivePhase != contracts.PhaseAccepted && !ev.ActivePhase.Terminal() {
			return classified(StateWaitingBehindAnother, "session runs %s (%s)", ev.SessionActive, ev.ActivePhase)
		}
		return classified(StateNotStarted, "session active %q", ev.SessionActive)
	case contracts.PhaseModel:
		switch {
		case sub.StreamKey == "":
			return classified(StateModelNotStarted, "step %d", sub.Step)
		case ev.StreamComplete:
			return classified(StateStreamCompleteNotRecorded, "step %d stream %s complete with %d chunks", sub.Step, sub.StreamKey, ev.StreamChunks)
		default:
			return classified(StateStreamIncomplete, "step %d stream %s stopped after %d chunks", sub.Step, sub.StreamKey, ev.StreamChunks)
		}
	case contracts.PhaseTools:
		return classifyTools(sub, ev)
	case contracts.PhaseCommit:
		return classified(StateFinalNotCommitted, "step %d leaf %s", sub.Step, sub.Leaf)
	}
	return classified(StateUnknown, "phase %q", sub.Phase)
}

// classifyTools sorts the step's calls into done, re-run and interrupted,
// exactly as the tools handler will treat them.
func classifyTools(sub contracts.Submission, ev Evidence) Classification {
	var rerun, interrupted []string
	done, denied := 0, 0
	for _, call := range sub.ToolRequests {
		rec := ev.ToolRecords[call.ID]
		switch {
		case rec.Result != nil:
			done++
		case deniedByApprover(sub, call.ID):
			denied++
		case rec.Started && ev.ToolEffects[call.ID] != contracts.ReadOnly:
			interrupted = append(interrupted, call.ID)
		default:
			rerun = append(rerun, call.ID)
		}
	}
	n := len(sub.ToolRequests)
	var c Classification
	switch {
	case done == n:
		c = classified(StateToolsDoneNotAdvanced, "step %d: all %d calls have results", sub.Step, n)
	case len(interrupted) > 0:
		c = classified(StateMutatingInterrupted, "step %d: %d mutating calls interrupted, %d to re-run, %d done", sub.Step, len(interrupted), len(rerun), done)
	case done > 0:
		c = classified(StateToolsPartlyDone, "step %d: %d of %d calls done, %d to re-run", sub.Step, done, n, len(rerun))
	default:
		c = classified(StateToolsPending, "step %d: %d calls to run", sub.Step, len(rerun))
	}
	if denied > 0 {
		c.Reason += fmt.Sprintf(", %d denied by the approver", denied)
	}
	c.Rerun, c.Interrupted = rerun, interrupted
	return c
}

func deniedByApprover(sub contracts.Submission, callID string) bool {
	for _, a := range sub.Approvals {
		if a.CallID == callID && a.Decision == contracts.Deny {
			return true
		}
	}
	return false
}
