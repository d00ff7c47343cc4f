package turn

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Honest events. A follower of a submission's events must be able to show
// each step's final text once and every tool call's single end:
//
//   - text_delta events carry the model attempt that streamed them; when the
//     model phase starts a new attempt of a step (a new stream key, because
//     an earlier attempt's stream broke or its process died), it first
//     writes stream_discarded for every earlier attempt of the step
//     (key discard/<step>/<attempt>), so followers drop their text — also
//     text a zombie holder of an old attempt writes later;
//   - a tool call's terminal event (tool_finished, tool_denied or
//     tool_interrupted) is written from its recorded result, under one key
//     per (submission, step, call): tool_finished/<step>/<call>. Re-running
//     the tools phase re-emits it, a no-op;
//   - a turn that ends FAILED marks what will never complete: the
//     incomplete stream of a model step (discarded) and the calls of a
//     tools step that have no result (interrupted).

// discardKey is the event key of the stream_discarded event of one attempt.
func discardKey(step, attempt int) string { return fmt.Sprintf("discard/%d/%d", step, attempt) }

// toolEndKey is the one event key of a call's terminal event, whichever
// type it has.
func toolEndKey(step int, callID string) string {
	return fmt.Sprintf("tool_finished/%d/%s", step, callID)
}

// discardAbandoned is called when the model phase has leased sub for a new
// attempt: unless it reuses a completed stream, every earlier attempt of the
// step is abandoned, and says so before the new attempt streams.
func (e *Engine) discardAbandoned(ctx context.Context, sub contracts.Submission, reuse bool) error {
	if reuse {
		return nil
	}
	return e.discard(ctx, sub, sub.Attempt-1, fmt.Sprintf("attempt %d replaces it, under the lease of %s", sub.Attempt, sub.LeaseOwner))
}

// discard writes stream_discarded for attempts 1..upTo of sub's step (each
// idempotent on its key).
func (e *Engine) discard(ctx context.Context, sub contracts.Submission, upTo int, why string) error {
	var evs []contracts.Event
	for k := 1; k <= upTo; k++ {
		evs = append(evs, contracts.Event{SubmissionID: sub.ID, Key: discardKey(sub.Step, k), Type: contracts.EventStreamDiscarded,
			Step: sub.Step, Attempt: k, At: e.now(),
			Text: fmt.Sprintf("attempt %d of step %d was discarded (its stream did not complete): %s", k, sub.Step+1, why)})
	}
	if len(evs) == 0 {
		return nil
	}
	if err := e.Events.AppendEvents(ctx, evs...); err != nil {
		return fmt.Errorf("appending stream_discarded events of submission %s step %d: %w", sub.ID, sub.Step, err)
	}
	return nil
}

// toolEnded writes call's terminal event from its recorded result r:
// tool_denied if the call is denied, tool_interrupted if it was reported
// interrupted, tool_finished otherwise.
func (e *Engine) toolEnded(ctx context.Context, sess contracts.Session, sub contracts.Submission, call contracts.ToolCall, r contracts.ToolResult) error {
	typ := contracts.EventToolFinished
	if d, _ := e.decide(sess, sub, call); d == contracts.Deny {
		typ = contracts.EventToolDenied
	} else if r.Content == Interrupted {
		typ = contracts.EventToolInterrupted
	}
	return e.emit(ctx, contracts.Event{SubmissionID: sub.ID, Key: toolEndKey(sub.Step, call.ID), Type: typ, Step: sub.Step,
		Tool: call.Name, CallID: call.ID, Text: r.Content, IsError: r.IsError})
}

// endOpen is called when cur is about to end FAILED with reason, before the
// failed event: an incomplete model stream of the step is discarded, and
// every call of a tools step without a result gets tool_interrupted. It
// does nothing if the record moved since cur was read (that write of the
// end will lose: the turn goes on, and its own events will tell).
func (e *Engine) endOpen(ctx context.Context, cur contracts.Submission, reason string) error {
	if cur.Phase != contracts.PhaseModel && cur.Phase != contracts.PhaseTools {
		return nil
	}
	now, err := e.Journal.GetSubmission(ctx, cur.ID)
	if err != nil {
		return fmt.Errorf("reading submission %s: %w", cur.ID, err)
	}
	if now.Version != cur.Version {
		return nil
	}
	if cur.Phase == contracts.PhaseModel {
		if cur.StreamKey == "" {
			return nil
		}
		st, err := e.Streams.GetStream(ctx, cur.StreamKey)
		if err != nil {
			return fmt.Errorf("reading stream %s: %w", cur.StreamKey, err)
		}
		if st.Done != nil {
			return nil // the step's text is complete; the turn fails after it
		}
		return e.discard(ctx, cur, cur.Attempt, "the turn ended ("+reason+")")
	}
	if len(cur.ToolRequests) == 0 {
		return nil
	}
	recs, err := e.Journal.ToolRecords(ctx, cur.ID, cur.Step)
	if err != nil {
		return fmt.Errorf("reading tool records of submission %s step %d: %w", cur.ID, cur.Step, err)
	}
	var evs []contracts.Event
	for _, call := range cur.ToolRequests {
		rec := recs[call.ID]
		if rec.Result != nil {
			continue
		}
		text := "not run: the turn ended (" + reason + ") before this call ran"
		switch {
		case rec.Started:
			text = "interrupted: the turn ended (" + reason + ") before this call recorded a result; outcome unknown"
		case awaitingApproval(cur, call.ID):
			text = "not run: the turn ended (" + reason + ") while this call awaited approval"
		}
		evs = append(evs, contracts.Event{SubmissionID: cur.ID, Key: toolEndKey(cur.Step, call.ID), Type: contracts.EventToolInterrupted,
			Step: cur.Step, Tool: call.Name, CallID: call.ID, Text: text, IsError: true, At: e.now()})
	}
	if len(evs) == 0 {
		return nil
	}
	if err := e.Events.AppendEvents(ctx, evs...); err != nil {
		return fmt.Errorf("appending tool_interrupted events of submission %s step %d: %w", cur.ID, cur.Step, err)
	}
	return nil
}

func awaitingApproval(sub contracts.Submission, callID string) bool {
	for _, a := range sub.Approvals {
		if a.CallID == callID && a.Decision == "" {
			return true
		}
	}
	return false
}
