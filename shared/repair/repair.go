// Package repair finds stuck submissions and re-drives them, and turns
// dead-lettered messages into a visible FAILED state.
//
// A submission is stuck when its lease expired, or when it holds no lease
// and has not moved for StuckAfter. Repair gathers the evidence about each
// unfinished submission, classifies it (recovery.ClassifySubmission) and
// performs the state's one action. It never does a phase's work itself: it
// re-enqueues the phase's handler (which re-reads the journal and acts on
// what it says), starts a waiting submission, denies an approval whose time
// ran out, or fails a submission whose attempts are exhausted (or whose
// wake-up was dead-lettered) with a reason that starts with its state, e.g.
// "attempts_exhausted:MODEL step 3". Run it on a schedule (the `repair`
// function on AWS, a ticker in `cairn dev`).
//
// # Usage
//
//	r := &repair.Repairer{Engine: eng, StuckAfter: time.Minute}
//	report, err := r.Run(ctx)
package repair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
	"github.com/cairnrun/cairn/shared/repair/recovery"
	"github.com/cairnrun/cairn/shared/turn"
)

// Repairer re-drives stuck work through the engine's ports.
type Repairer struct {
	Engine     *turn.Engine
	StuckAfter time.Duration // default 60s
	Batch      int           // submissions examined per run; default 500
}

// Report counts what one Run did. States counts the recovery state each
// scanned or dead-lettered submission was classified in.
type Report struct {
	Scanned, Redriven, Started, Failed, Expired, Poison int
	States                                              map[recovery.State]int
}

func (rep *Report) count(s recovery.State) {
	if rep.States == nil {
		rep.States = make(map[recovery.State]int)
	}
	rep.States[s]++
}

// Run makes one repair pass.
func (r *Repairer) Run(ctx context.Context) (Report, error) {
	var rep Report
	if err := r.drainDLQs(ctx, &rep); err != nil {
		return rep, err
	}
	e := r.Engine
	batch := r.Batch
	if batch <= 0 {
		batch = 500
	}
	subs, err := e.Journal.ListUnfinished(ctx, batch)
	if err != nil {
		return rep, fmt.Errorf("listing unfinished submissions: %w", err)
	}
	var errs []error
	for _, sub := range subs {
		rep.Scanned++
		if err := r.one(ctx, sub, &rep); err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

func (r *Repairer) log() *slog.Logger {
	if r.Engine.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Engine.Log
}

func (r *Repairer) stuckAfter() time.Duration {
	if r.StuckAfter <= 0 {
		return time.Minute
	}
	return r.StuckAfter
}

func (r *Repairer) one(ctx context.Context, sub contracts.Submission, rep *Report) error {
	e := r.Engine
	now := e.Clock.Now()
	var sess contracts.Session
	if needsSession(sub, now) {
		var err error
		if sess, err = e.Journal.GetSession(ctx, sub.SessionID); err != nil {
			return fmt.Errorf("reading session %s of submission %s: %w", sub.SessionID, sub.ID, err)
		}
	}
	ev, err := recovery.Gather(ctx, e.Journal, e.Transcript, e.Streams, e.Registry, sess, sub, now)
	if err != nil {
		return fmt.Errorf("classifying submission %s: %w", sub.ID, err)
	}
	ev.StuckAfter, ev.MaxAttempts = r.stuckAfter(), maxAttempts(e)
	c := recovery.ClassifySubmission(sub, ev)
	rep.count(c.State)
	if c.Action != recovery.ActionWait && c.Action != recovery.ActionNone {
		r.log().Info("repairing submission", "session_id", sub.SessionID, "submission_id", sub.ID, "step", sub.Step,
			"phase", sub.Phase, "state", c.State, "action", c.Action, "reason", c.Reason, "rerun", c.Rerun, "interrupted", c.Interrupted)
	}
	nonce := fmt.Sprintf("repair/%d/%d", sub.Version, now.Unix()/int64(r.stuckAfter()/time.Second+1))
	switch c.Action {
	case recovery.ActionDenyExpired:
		return r.expire(ctx, sub, now, rep)
	case recovery.ActionFail:
		rep.Failed++
		return e.Fail(ctx, sub, c.Reason)
	case recovery.ActionStartSession:
		rep.Started++
		return e.StartNext(ctx, sub.SessionID)
	case recovery.ActionEnqueueModel, recovery.ActionNewAttempt:
		rep.Redriven++
		return e.Enqueue(ctx, contracts.QueueModel, sub, nonce)
	case recovery.ActionEnqueueTools:
		rep.Redriven++
		return e.Enqueue(ctx, contracts.QueueTools, sub, nonce)
	case recovery.ActionEnqueueCommit:
		rep.Redriven++
		return e.Enqueue(ctx, contracts.QueueCommit, sub, nonce)
	}
	return nil // wait or none
}

// needsSession reports whether Gather will read sub's session: for an
// ACCEPTED record (is another turn running?) or an unparked TOOLS one (the
// tools' effects), and never under a live lease.
func needsSession(sub contracts.Submission, now time.Time) bool {
	if journal.Leased(sub, "", now) {
		return false
	}
	return sub.Phase == contracts.PhaseAccepted || (sub.Phase == contracts.PhaseTools && !hasPending(sub))
}

func maxAttempts(e *turn.Engine) int {
	if e.MaxAttempts > 0 {
		return e.MaxAttempts
	}
	return turn.DefaultMaxAttempts
}

func hasPending(sub contracts.Submission) bool {
	for _, a := range sub.Approvals {
		if a.Decision == "" {
			return true
		}
	}
	return false
}

// expire denies every pending approval whose time ran out and wakes the
// tools phase; a parked turn with time left is left alone.
func (r *Repairer) expire(ctx context.Context, sub contracts.Submission, now time.Time, rep *Report) error {
	e := r.Engine
	next := sub
	next.Approvals = append([]contracts.Approval(nil), sub.Approvals...)
	changed := false
	for i, a := range next.Approvals {
		if a.Decision == "" && !now.Before(a.ExpiresAt) {
			next.Approvals[i].Decision, next.Approvals[i].Reason = contracts.Deny, "approval timed out"
			changed = true
		}
	}
	if !changed {
		return nil
	}
	upd, err := journal.Update(ctx, e.Journal, sub, next, now)
	if errors.Is(err, contracts.ErrConflict) {
		return nil
	}
	if err != nil {
		return err
	}
	rep.Expired++
	return e.Enqueue(ctx, contracts.QueueTools, upd, "expired")
}

// drainDLQs fails the submission of every dead-lettered message.
func (r *Repairer) drainDLQs(ctx context.Context, rep *Report) error {
	e := r.Engine
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit} {
		for {
			ds, err := e.Queue.Receive(ctx, contracts.DLQ(q), 10, time.Minute)
			if err != nil {
				return fmt.Errorf("receiving from %s: %w", contracts.DLQ(q), err)
			}
			if len(ds) == 0 {
				break
			}
			for _, d := range ds {
				sub, err := e.Journal.GetSubmission(ctx, d.Message.SubmissionID)
				if err == nil {
					c := recovery.ClassifySubmission(sub, recovery.Evidence{
						Now: e.Clock.Now(), DeadLetter: &recovery.DeadLetter{Queue: q, Step: d.Message.Step, Phase: d.Message.Phase},
					})
					rep.count(c.State)
					if c.Action == recovery.ActionFail {
						rep.Poison++
						if err := e.Fail(ctx, sub, c.Reason); err != nil {
							return err
						}
					}
				} else if !errors.Is(err, contracts.ErrNotFound) {
					return fmt.Errorf("reading submission %s: %w", d.Message.SubmissionID, err)
				}
				if err := e.Queue.Delete(ctx, contracts.DLQ(q), d.Receipt); err != nil {
					return fmt.Errorf("deleting from %s: %w", contracts.DLQ(q), err)
				}
			}
		}
	}
	return nil
}

// BreakForeignLeases clears every lease not held by owner. Only for the
// embedded backend, where one process owns the data directory (it holds
// its lock), so any other owner is a previous boot that died.
func (r *Repairer) BreakForeignLeases(ctx context.Context, owner string) (int, error) {
	e := r.Engine
	subs, err := e.Journal.ListUnfinished(ctx, 100000)
	if err != nil {
		return 0, fmt.Errorf("listing unfinished submissions: %w", err)
	}
	n := 0
	for _, sub := range subs {
		if sub.LeaseOwner == "" || turn.OwnedBy(sub.LeaseOwner, owner) {
			continue
		}
		if _, err := journal.Break(ctx, e.Journal, sub, e.Clock.Now()); err != nil && !errors.Is(err, contracts.ErrConflict) {
			return n, err
		}
		n++
	}
	return n, nil
}
