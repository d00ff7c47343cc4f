package turn

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
)

// Commit moves the session head to the turn's leaf, marks the submission
// COMMITTED, emits completion and starts the session's next submission.
func (e *Engine) Commit(ctx context.Context, m contracts.Message) error {
	return e.batch(ctx, func(ctx context.Context) error { // the whole phase and the delete: one write
		if err := e.commit(ctx, m); err != nil {
			return err
		}
		e.ack(ctx)
		return nil
	})
}

func (e *Engine) commit(ctx context.Context, m contracts.Message) error {
	sub, err := e.submission(ctx, m.SubmissionID)
	if err != nil {
		return e.staleOr(ctx, err, m)
	}
	describe(ctx, sub)
	if sub.Phase == contracts.PhaseCommitted {
		return e.StartNext(ctx, sub.SessionID) // a repeat: make sure the session moved on
	}
	if sub.Phase != contracts.PhaseCommit {
		return nil
	}
	next := sub
	next.Phase = contracts.PhaseCommitted
	return e.finish(ctx, sub, next)
}

// finish ends cur COMMITTED as next: frees the session and moves its head
// to next's leaf, tells the Ending hook, writes the end event, advances
// and starts the session's next submission. cur is the record as stored:
// COMMIT in the commit phase, or the model phase's own when the store
// batches and the answer is final (recordModel: one write, no hop).
func (e *Engine) finish(ctx context.Context, cur, next contracts.Submission) error {
	// Call by call, the end event is written before the terminal advance,
	// so a reader that sees the record terminal and then reads events
	// finds it. In one transaction (Deps.Batch) no reader sees between
	// them: the conditional advance goes first, so one that loses writes
	// nothing else (a model phase whose lease was taken over must not move
	// the session's head).
	first := e.Batch != nil
	done := next
	advance := func() (bool, error) {
		var err error
		done, err = journal.Advance(ctx, e.Journal, cur, next, e.now())
		if e.lost(ctx, err) {
			return false, nil
		}
		if err == nil {
			e.advanced(ctx, next.Leaf) // a final answer's node, written in the same batch
		}
		return err == nil, err
	}
	if first {
		if ok, err := advance(); !ok {
			return err
		}
	}
	sess, err := e.release(ctx, next, true)
	if err != nil {
		return err
	}
	if err := e.ending(ctx, next); err != nil {
		return err
	}
	if err := e.emit(ctx, contracts.Event{SubmissionID: next.ID, Key: endKey(next, "committed"), Type: contracts.EventCommitted, Step: next.Step, Text: next.Result}); err != nil {
		return err
	}
	if !first {
		if ok, err := advance(); !ok {
			return err
		}
	}
	ended(ctx, done)
	e.log().InfoContext(ctx, "submission committed", "session_id", done.SessionID, "submission_id", done.ID, "step", done.Step)
	return e.startNext(ctx, done.SessionID, sess, nil)
}

// release frees the session if sub is its active submission; moveHead also
// moves the session head to sub's leaf in the same conditional write. It
// returns the session as it read or wrote it last (for startNext), nil
// when it did not get that far.
func (e *Engine) release(ctx context.Context, sub contracts.Submission, moveHead bool) (*contracts.Session, error) {
	for range 8 {
		sess, err := e.Journal.GetSession(ctx, sub.SessionID)
		if err != nil {
			return nil, fmt.Errorf("reading session %s: %w", sub.SessionID, err)
		}
		if sess.Active != sub.ID {
			return &sess, nil
		}
		upd := sess
		upd.Active = ""
		if moveHead {
			upd.Head = sub.Leaf
		}
		upd.UpdatedAt = e.now()
		wrote, err := e.Journal.UpdateSession(ctx, upd, sess.Version)
		if e.lost(ctx, err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("releasing session %s: %w", sub.SessionID, err)
		}
		return &wrote, nil
	}
	return nil, fmt.Errorf("releasing session %s: too much contention: %w", sub.SessionID, contracts.ErrConflict)
}

// Fail ends sub FAILED with reason (e.g. "limit_tripped:steps"), frees the
// session and starts the next submission. A lost race is not an error.
func (e *Engine) Fail(ctx context.Context, sub contracts.Submission, reason string) error {
	next := sub
	next.Phase, next.Error = contracts.PhaseFailed, reason
	return e.finishFailed(ctx, sub, next)
}

func (e *Engine) finishFailed(ctx context.Context, cur, next contracts.Submission) error {
	return e.batch(ctx, func(ctx context.Context) error { return e.failed(ctx, cur, next) }) // the end: one write
}

func (e *Engine) failed(ctx context.Context, cur, next contracts.Submission) error {
	next.FailedPhase, next.FailedAttempt = cur.Phase, cur.Attempt // what a retry resumes
	if err := e.ending(ctx, next); err != nil {
		return err
	}
	if err := e.endOpen(ctx, cur, next.Error); err != nil { // what will never complete says so
		return err
	}
	if err := e.emit(ctx, contracts.Event{SubmissionID: cur.ID, Key: endKey(cur, "failed"), Type: contracts.EventFailed, Step: cur.Step, Text: next.Error, IsError: true}); err != nil {
		return err
	}
	done, err := journal.Advance(ctx, e.Journal, cur, next, e.now())
	if e.lost(ctx, err) {
		return nil
	}
	if err != nil {
		return err
	}
	ended(ctx, done)
	e.log().WarnContext(ctx, "submission failed", "session_id", done.SessionID, "submission_id", done.ID, "step", done.Step, "reason", done.Error)
	return e.afterEnd(ctx, done)
}

// ending tells the Ending hook, if any, that sub is about to end.
func (e *Engine) ending(ctx context.Context, sub contracts.Submission) error {
	if e.Ending == nil {
		return nil
	}
	if err := e.Ending(ctx, sub); err != nil {
		return fmt.Errorf("ending submission %s: %w", sub.ID, err)
	}
	return nil
}

func (e *Engine) staleOr(ctx context.Context, err error, m contracts.Message) error {
	if isNotFound(err) {
		e.log().WarnContext(ctx, "message for unknown submission", "submission_id", m.SubmissionID)
		return nil
	}
	return fmt.Errorf("reading submission %s: %w", m.SubmissionID, err)
}
