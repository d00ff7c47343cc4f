package turn

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
)

// Retrying a FAILED turn reopens its record as a new attempt at the turn
// (recorded in Retries: how it had failed, who asked, with what limits)
// waiting ACCEPTED for its session like any new submission. When it gets
// the session it resumes at the step and phase it failed in: the
// transcript to its leaf is kept, a completed stream of the step is reused
// and every recorded tool result stands (a mutating call that started and
// left no result is reported interrupted, never re-run), so nothing that
// finished runs twice. It commits on its own branch: the head moves to it.

// Retry reopens a FAILED submission of the session (see above). limits,
// when set, replace the limits it runs under (for a turn that tripped one).
// A turn that would trip the same limit again at once is refused
// (ErrInvalid, naming the limit to raise). Repeating a retry while the
// turn runs again returns it; a COMMITTED or CANCELLED turn answers
// ErrConflict.
func (e *Engine) Retry(ctx context.Context, sessionID, submissionID string, limits *contracts.Limits) (contracts.Submission, error) {
	if limits != nil {
		if err := CheckSpec(contracts.SessionSpec{Limits: *limits}); err != nil {
			return contracts.Submission{}, err
		}
	}
	for range 8 {
		sub, err := e.Journal.GetSubmission(ctx, submissionID)
		if err == nil && sub.SessionID != sessionID {
			err = fmt.Errorf("submission %s in session %s: %w", submissionID, sessionID, contracts.ErrNotFound)
		}
		if err != nil {
			return sub, err
		}
		switch {
		case !sub.Phase.Terminal() && len(sub.Retries) > 0:
			return sub, nil // a repeat: it is running again
		case sub.Phase != contracts.PhaseFailed:
			return sub, fmt.Errorf("submission %s is %s: only a FAILED turn is retried: %w", sub.ID, sub.Phase, contracts.ErrConflict)
		case strings.HasPrefix(sub.Error, "leaf_missing"):
			return sub, fmt.Errorf("submission %s cannot resume: %s: %w", sub.ID, sub.Error, contracts.ErrConflict)
		}
		sess, err := e.Journal.GetSession(ctx, sessionID)
		if err != nil {
			return sub, fmt.Errorf("reading session %s: %w", sessionID, err)
		}
		if sess.Workflow != nil {
			return sub, fmt.Errorf("submission %s runs node %s of workflow run %s, which has recorded its failure: start a new run instead: %w",
				sub.ID, sess.Workflow.NodeID, sess.Workflow.RunID, contracts.ErrConflict)
		}
		now := e.now()
		next := reopened(sub, asker(ctx), limits, now)
		run := next
		run.Phase = next.Resume
		if which := tripped(run, limitsFor(sess, next), now); which != "" {
			return sub, fmt.Errorf("submission %s would trip limits.%s again at once (%s): retry with it raised in \"limits\": %w", sub.ID, limitName(which), sub.Error, contracts.ErrInvalid)
		}
		done, err := journal.Reopen(ctx, e.Journal, sub, next, now)
		if e.lost(ctx, err) {
			continue
		}
		if err != nil {
			return sub, err
		}
		n := len(done.Retries)
		if err := e.emit(ctx, contracts.Event{SubmissionID: done.ID, Key: fmt.Sprintf("retry/%d", n), Type: contracts.EventRetried, Step: done.Step,
			Text: fmt.Sprintf("retry %d by %s: resumes at step %d %s (it had failed: %s)", n, done.Retries[n-1].By, done.Step+1, done.Resume, sub.Error)}); err != nil {
			return done, err
		}
		e.log().InfoContext(ctx, "submission retried", "session_id", done.SessionID, "submission_id", done.ID, "step", done.Step, "resume", done.Resume, "retry", n)
		if err := e.StartNext(ctx, sessionID); err != nil {
			// The retry is durable; repair starts it if this failed.
			e.log().WarnContext(ctx, "starting retried submission", "submission_id", done.ID, "error", err)
		}
		if latest, err := e.Journal.GetSubmission(ctx, done.ID); err == nil {
			done = latest
		}
		return done, nil
	}
	return contracts.Submission{}, fmt.Errorf("retrying submission %s: too much contention: %w", submissionID, contracts.ErrConflict)
}

// reopened is sub's record as a retry waiting to resume: ACCEPTED, the
// phase to resume named, its failure moved into Retries, run time and
// parked time counted afresh.
func reopened(sub contracts.Submission, by string, limits *contracts.Limits, now time.Time) contracts.Submission {
	next := sub
	resume := sub.FailedPhase
	if resume == "" || resume.Terminal() { // a record from before FailedPhase was kept
		resume = contracts.PhaseModel
		if len(sub.ToolRequests) > 0 {
			resume = contracts.PhaseTools
		}
	}
	next.Retries = append(append([]contracts.Retry(nil), sub.Retries...), contracts.Retry{
		Error: sub.Error, Phase: resume, Step: sub.Step, Attempt: sub.FailedAttempt, By: by, Limits: limits, At: now})
	next.Phase, next.Resume, next.Error = contracts.PhaseAccepted, resume, ""
	next.Attempt, next.AttemptFloor = sub.FailedAttempt, 0
	next.FailedPhase, next.FailedAttempt = "", 0
	next.StartedAt, next.ParkedAt, next.ParkedNanos = now, time.Time{}, 0
	next.Approvals = nil // decided ones are kept, undecided asked afresh (with a new expiry)
	for _, a := range sub.Approvals {
		if a.Decision != "" {
			next.Approvals = append(next.Approvals, a)
		}
	}
	if limits != nil {
		next.Limits = limits
	}
	return next
}

func limitName(which string) string {
	switch which {
	case "steps":
		return "max_steps"
	case "tokens":
		return "max_tokens"
	}
	return "max_wall_seconds"
}

// resume moves a retried submission that got its session back to the
// phase it failed in, and wakes that phase.
func (e *Engine) resume(ctx context.Context, sub contracts.Submission) error {
	sub, err := journal.Resume(ctx, e.Journal, sub, e.now())
	if e.lost(ctx, err) {
		return nil
	}
	if err != nil {
		return err
	}
	queue := contracts.QueueModel
	switch sub.Phase {
	case contracts.PhaseTools:
		queue = contracts.QueueTools
	case contracts.PhaseCommit:
		queue = contracts.QueueCommit
	}
	return e.Enqueue(ctx, queue, sub, fmt.Sprintf("retry/%d", len(sub.Retries)))
}
