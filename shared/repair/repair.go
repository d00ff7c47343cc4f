package repair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
	"github.com/cairnrun/cairn/shared/repair/recovery"
	"github.com/cairnrun/cairn/shared/telemetry"
	"github.com/cairnrun/cairn/shared/turn"
	"github.com/cairnrun/cairn/shared/workflow"
)

// DefaultStuckAfter is how long a submission without a live lease may go
// without a write before a pass re-drives it: one lease TTL
// (turn.DefaultLeaseTTL). On AWS a phase's advance and its next message
// are two writes; a process dying between them leaves a turn that only
// repair moves, so this bounds that recovery (plus a pass interval). A
// re-drive of a turn whose message is merely slow is a duplicate its
// handler ignores.
const DefaultStuckAfter = 30 * time.Second

// DefaultRunStuckAfter is how long a RUNNING workflow run may go without a
// write before a pass wakes it: a repair evaluation re-starts every pending
// node (create-if-absent), so a run whose nodes are only slow is not woken
// more often.
const DefaultRunStuckAfter = time.Minute

// Repairer re-drives stuck work through the engine's (and the workflow
// driver's) ports.
type Repairer struct {
	Engine *turn.Engine
	// Driver, when workflows are served, adds the run sweep and the
	// workflow DLQ to every pass; nil = submissions only.
	Driver *workflow.Driver
	// StuckAfter is the threshold for submissions and, when set, runs
	// too; default DefaultStuckAfter (submissions), DefaultRunStuckAfter
	// (runs).
	StuckAfter time.Duration
	Batch      int // submissions examined per pass; default 500
}

// Report counts what one pass did. States counts the recovery state each
// scanned or dead-lettered submission was classified in.
type Report struct {
	Scanned, Redriven, Started, Failed, Expired, Poison int
	Cancelled                                           int // requested cancels finished (their asker stopped first)
	States                                              map[recovery.State]int
	RunsScanned                                         int // RUNNING workflow runs examined
	RunsWoken                                           int // stuck RUNNING workflow runs woken
	RunsPoisoned                                        int // runs ended FAILED poison:… from the workflow DLQ
}

// Any reports whether the pass did anything (scanning aside).
func (rep Report) Any() bool {
	return rep.Redriven+rep.Started+rep.Failed+rep.Cancelled+rep.Expired+rep.Poison+rep.RunsWoken+rep.RunsPoisoned > 0
}

// add sums o into rep.
func (rep *Report) add(o Report) {
	rep.Scanned += o.Scanned
	rep.Redriven += o.Redriven
	rep.Started += o.Started
	rep.Failed += o.Failed
	rep.Cancelled += o.Cancelled
	rep.Expired += o.Expired
	rep.Poison += o.Poison
	rep.RunsScanned += o.RunsScanned
	rep.RunsWoken += o.RunsWoken
	rep.RunsPoisoned += o.RunsPoisoned
	for s, n := range o.States {
		if rep.States == nil {
			rep.States = make(map[recovery.State]int)
		}
		rep.States[s] += n
	}
}

func (rep *Report) count(s recovery.State) {
	if rep.States == nil {
		rep.States = make(map[recovery.State]int)
	}
	rep.States[s]++
}

// Run makes one repair pass (the repair function's handler, the dev
// ticker's tick): stuck submissions and the phase DLQs, then, with a
// Driver, stuck workflow runs and the workflow DLQ. The run passes run even
// when the submission pass failed; errors are joined.
func (r *Repairer) Run(ctx context.Context) (Report, error) {
	rep, err := r.Submissions(ctx)
	if r.Driver == nil {
		return rep, err
	}
	scanned, woken, werr := r.runs(ctx, r.Driver)
	poisoned, derr := r.runDLQ(ctx, r.Driver)
	rep.RunsScanned, rep.RunsWoken, rep.RunsPoisoned = scanned, woken, poisoned
	return rep, errors.Join(err, werr, derr)
}

// Submissions makes the submission half of a pass: it fails the
// submission of every dead-lettered phase message, then classifies every
// unfinished submission and performs its state's action.
func (r *Repairer) Submissions(ctx context.Context) (Report, error) {
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
		return DefaultStuckAfter
	}
	return r.StuckAfter
}

func (r *Repairer) runStuckAfter() time.Duration {
	if r.StuckAfter <= 0 {
		return DefaultRunStuckAfter
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
		// The repair joins the turn's trace (a child of its accept span),
		// so a re-drive shows in the trace it resumes.
		var span trace.Span
		ctx, span = telemetry.Tracer().Start(telemetry.Extract(ctx, sub.Trace), "cairn.repair "+string(c.Action),
			trace.WithAttributes(attribute.String("cairn.submission_id", sub.ID), attribute.String("cairn.session_id", sub.SessionID),
				attribute.String("cairn.repair.state", string(c.State)), attribute.String("cairn.repair.reason", c.Reason),
				attribute.Int("cairn.step", sub.Step), attribute.String("cairn.phase", string(sub.Phase))))
		defer span.End()
		telemetry.RepairActions.Record(ctx, 1, string(c.Action))
		r.log().InfoContext(ctx, "repairing submission", "session_id", sub.SessionID, "submission_id", sub.ID, "step", sub.Step,
			"phase", sub.Phase, "state", c.State, "action", c.Action, "reason", c.Reason, "rerun", c.Rerun, "interrupted", c.Interrupted)
	}
	nonce := fmt.Sprintf("repair/%d/%d", sub.Version, now.Unix()/int64(r.stuckAfter()/time.Second+1))
	switch c.Action {
	case recovery.ActionWait, recovery.ActionNone, recovery.ActionDenyExpired: // expiry's are approval_decided events
	default:
		// The turn's timeline shows what repair did, before it does it (so
		// a failed end's event comes last); once per re-drive: the key is
		// the message's nonce.
		err := e.Events.AppendEvents(ctx, contracts.Event{SubmissionID: sub.ID, Key: nonce + "/" + string(c.Action), Type: contracts.EventRepaired,
			Step: sub.Step, Text: string(c.Action) + ": " + c.Reason, At: now})
		if err != nil {
			return fmt.Errorf("appending the repaired event of submission %s: %w", sub.ID, err)
		}
	}
	return r.act(ctx, sub, c, now, nonce, rep)
}

// act performs classification c's action on sub.
func (r *Repairer) act(ctx context.Context, sub contracts.Submission, c recovery.Classification, now time.Time, nonce string, rep *Report) error {
	e := r.Engine
	switch c.Action {
	case recovery.ActionDenyExpired:
		return r.expire(ctx, sub, now, rep)
	case recovery.ActionFinishCancel:
		rep.Cancelled++
		_, err := e.FinishCancel(ctx, sub)
		return err
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
			next.Approvals[i].DecidedBy, next.Approvals[i].DecidedAt = contracts.ApprovalTimeout, now
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
	var evs []contracts.Event
	for i, a := range upd.Approvals {
		if a.DecidedBy == contracts.ApprovalTimeout && sub.Approvals[i].Decision == "" {
			evs = append(evs, turn.DecidedEvent(upd, a))
		}
	}
	if err := e.Events.AppendEvents(ctx, evs...); err != nil {
		return fmt.Errorf("appending approval_decided events of submission %s: %w", sub.ID, err)
	}
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
					// only a poisoned turn is failed here: any other state (a
					// recorded answer whose commit ran out of the model
					// message's deliveries) is the regular pass's, with its
					// whole evidence
					if c.State == recovery.StatePoisoned || c.State == recovery.StateTerminal {
						rep.count(c.State)
					}
					if c.State == recovery.StatePoisoned {
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
