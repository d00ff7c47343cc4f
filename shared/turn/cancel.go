package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
)

// Cancelling a turn is two writes. The first records the request on the
// submission (Cancel: who, why, when) and clears the lease, so every holder
// of the turn loses its next conditional write and stops: a model stream
// or a tool call in progress notices within DefaultWatchEvery (the holder
// watches the record) and is abandoned (a call's process group or remote
// call is killed with its context). The second ends the turn CANCELLED,
// frees the session and starts its next submission. Whoever finds a
// requested cancel finishes it — the asker, a phase handler that loads the
// record, or repair — so a crash between the two still ends CANCELLED.
//
// A turn whose final answer is recorded (COMMIT) is no longer cancelled: a
// cancel racing the commit either wins before the answer is recorded (the
// commit never happens) or finds it recorded and answers ErrConflict, so
// the turn ends in exactly one terminal phase.

// DefaultWatchEvery is how often a lease holder reads its record to notice
// a cancel (and a lost lease) before its next heartbeat.
const DefaultWatchEvery = 500 * time.Millisecond

// MaxCancelReasonBytes bounds a cancel's reason.
const MaxCancelReasonBytes = 4 << 10

// asker names who asks for an action: the principal the API put in ctx,
// else "system" (repair, a workflow run's cancel).
func asker(ctx context.Context) string {
	if p, ok := contracts.PrincipalFrom(ctx); ok && p.Name != "" {
		return p.Name
	}
	return "system"
}

// Cancel ends a submission of the session CANCELLED with reason, recording
// who asked (the ctx principal). Idempotent: cancelling a CANCELLED turn
// returns it. A turn that COMMITTED, FAILED or is committing its final
// answer answers ErrConflict; an unknown one ErrNotFound.
func (e *Engine) Cancel(ctx context.Context, sessionID, submissionID, reason string) (contracts.Submission, error) {
	if len(reason) > MaxCancelReasonBytes {
		return contracts.Submission{}, fmt.Errorf("reason is %d bytes, limit %d: %w", len(reason), MaxCancelReasonBytes, contracts.ErrTooLarge)
	}
	by := asker(ctx)
	for range 8 {
		sub, err := e.Journal.GetSubmission(ctx, submissionID)
		if err == nil && sub.SessionID != sessionID {
			err = fmt.Errorf("submission %s in session %s: %w", submissionID, sessionID, contracts.ErrNotFound)
		}
		if err != nil {
			return sub, err
		}
		switch {
		case sub.Phase == contracts.PhaseCancelled:
			return sub, nil
		case sub.Phase.Terminal():
			return sub, fmt.Errorf("submission %s already ended %s: %w", sub.ID, sub.Phase, contracts.ErrConflict)
		case sub.Phase == contracts.PhaseCommit && sub.Cancel == nil:
			return sub, fmt.Errorf("submission %s has recorded its final answer and is committing: too late to cancel: %w", sub.ID, contracts.ErrConflict)
		}
		if sub.Cancel == nil {
			now := e.now()
			next := sub
			next.Cancel = &contracts.Cancel{By: by, Reason: reason, At: now}
			next.LeaseOwner, next.LeaseUntil = "", time.Time{} // the holder's next write loses: it stops
			sub, err = journal.Update(ctx, e.Journal, sub, next, now)
			if e.lost(ctx, err) {
				continue
			}
			if err != nil {
				return sub, err
			}
			e.log().InfoContext(ctx, "cancel requested", "session_id", sub.SessionID, "submission_id", sub.ID, "phase", sub.Phase, "step", sub.Step, "by", by)
		}
		return e.FinishCancel(ctx, sub)
	}
	return contracts.Submission{}, fmt.Errorf("cancelling submission %s: too much contention: %w", submissionID, contracts.ErrConflict)
}

// FinishCancel ends sub, whose cancel was requested, CANCELLED: what will
// never complete says so, the end event is written, the record ends, the
// session is freed and its next submission started. Safe to repeat and to
// race (the first end wins); it returns the terminal record.
func (e *Engine) FinishCancel(ctx context.Context, sub contracts.Submission) (contracts.Submission, error) {
	for range 8 {
		if sub.Phase.Terminal() {
			return sub, e.afterEnd(ctx, sub)
		}
		if sub.Cancel == nil {
			return sub, fmt.Errorf("submission %s: no cancel was requested: %w", sub.ID, contracts.ErrInvalid)
		}
		next := sub
		next.Phase, next.Error = contracts.PhaseCancelled, cancelText(*sub.Cancel)
		if err := e.ending(ctx, next); err != nil {
			return sub, err
		}
		if err := e.endOpen(ctx, sub, "cancelled"); err != nil {
			return sub, err
		}
		if err := e.emit(ctx, contracts.Event{SubmissionID: sub.ID, Key: endKey(sub, "cancelled"), Type: contracts.EventCancelled, Step: sub.Step, Text: next.Error, IsError: true}); err != nil {
			return sub, err
		}
		// The session is freed before the end is written (as a commit
		// does): a crash between the two leaves the cancel requested, which
		// repair finishes, never a session held by an ended turn. Every
		// other writer of the record is fenced by the request, so only
		// another finisher can win the end.
		if _, err := e.release(ctx, sub, false); err != nil {
			return sub, err
		}
		done, err := journal.Advance(ctx, e.Journal, sub, next, e.now())
		if e.lost(ctx, err) {
			if sub, err = e.Journal.GetSubmission(ctx, sub.ID); err != nil {
				return sub, fmt.Errorf("reading submission %s: %w", next.ID, err)
			}
			continue
		}
		if err != nil {
			return sub, err
		}
		ended(ctx, done)
		e.log().InfoContext(ctx, "submission cancelled", "session_id", done.SessionID, "submission_id", done.ID, "step", done.Step, "reason", done.Error)
		return done, e.afterEnd(ctx, done)
	}
	return sub, fmt.Errorf("cancelling submission %s: too much contention: %w", sub.ID, contracts.ErrConflict)
}

// afterEnd frees the session of a turn that ended without committing and
// starts the session's next submission.
func (e *Engine) afterEnd(ctx context.Context, done contracts.Submission) error {
	if _, err := e.release(ctx, done, false); err != nil {
		return err
	}
	return e.StartNext(ctx, done.SessionID)
}

func cancelText(c contracts.Cancel) string {
	s := "cancelled by " + c.By
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// endKey is the event key of a turn's end event: one per attempt at the
// turn, so a retried turn's second end is written too.
func endKey(sub contracts.Submission, what string) string {
	if len(sub.Retries) == 0 {
		return "end/" + what
	}
	return fmt.Sprintf("end/%s/retry-%d", what, len(sub.Retries))
}

// cancelled finishes sub's requested cancel if there is one: a handler
// that loads such a record ends it instead of working (ok=true: it did).
func (e *Engine) cancelled(ctx context.Context, sub contracts.Submission) (bool, error) {
	if sub.Cancel == nil || sub.Phase.Terminal() {
		return false, nil
	}
	_, err := e.FinishCancel(ctx, sub)
	if errors.Is(err, contracts.ErrConflict) {
		return true, nil
	}
	return true, err
}
