package turn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/journal"
)

// A lease is short (DefaultLeaseTTL, tens of seconds) and renewed on a
// heartbeat while its holder works, so a dead holder's lease lapses within
// one TTL and repair re-drives the turn, while a live one keeps it for as
// long as a model stream or a tool call takes.

// heartbeat beats f, a lease holder's renewal, every TTL/3. Tests tick it
// by hand through Deps.Heartbeat.
func (e *Engine) heartbeat(f func() bool) *beat {
	if e.Heartbeat != nil {
		ticks, stop := e.Heartbeat(e.leaseTTL() / 3)
		return ticked(ticks, stop, f)
	}
	return every(e.leaseTTL()/3, f)
}

// holder keeps a handler's lease alive while it does long work. The
// handler's next write of the submission record must be conditional on the
// latest version the holder wrote: it gets it from release.
type holder struct {
	e      *Engine
	cancel context.CancelCauseFunc
	beats  [2]*beat // the renewal and the look (beat.go)

	mu   sync.Mutex
	sub  contracts.Submission
	lost error
}

// errLeaseLost is the cause of a holder's context when a renewal lost.
var errLeaseLost = errors.New("the lease was lost to another holder")

// ErrCancelled is the cause of a holder's context when the turn's cancel
// was requested: the work in progress (a model stream, a tool call) is
// abandoned.
var ErrCancelled = errors.New("the turn was cancelled")

// watch beats f, a lease holder's look at its record, every
// Deps.WatchEvery (DefaultWatchEvery when zero).
func (e *Engine) watch(f func() bool) *beat {
	period := e.WatchEvery
	if period <= 0 {
		period = DefaultWatchEvery
	}
	return every(period, f)
}

// hold starts renewing the lease of sub (which this run just took) and
// returns a context for the work that is cancelled, with the cause
// errLeaseLost, as soon as a renewal finds that another writer moved the
// record (a holder that loses its lease stops before its next write).
func (e *Engine) hold(ctx context.Context, sub contracts.Submission) (context.Context, *holder) {
	work, cancel := context.WithCancelCause(ctx)
	h := &holder{e: e, cancel: cancel, sub: sub}
	// Each beat stops once the work ended (released, cancelled, or the
	// lease lost: a renewal that lost cancels it), or when it says so.
	h.beats = [2]*beat{
		e.heartbeat(func() bool { return work.Err() == nil && h.renew(work) }),
		e.watch(func() bool { return work.Err() == nil && h.look(work) }),
	}
	return work, h
}

// renew extends the lease by one TTL (a conditional write on the latest
// version); false when the holder must stop renewing.
func (h *holder) renew(ctx context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.e
	next, err := journal.Renew(ctx, e.Journal, h.sub, h.sub.LeaseOwner, e.now(), e.leaseTTL())
	switch {
	case err == nil:
		h.sub = next
		return true
	case errors.Is(err, contracts.ErrConflict):
		h.lost = err
		e.log().WarnContext(ctx, "lease lost while working: stopping", "session_id", h.sub.SessionID,
			"submission_id", h.sub.ID, "step", h.sub.Step, "phase", h.sub.Phase, "error", err)
		h.cancel(errLeaseLost)
		return false
	case ctx.Err() != nil:
		return false
	default:
		// A transient store error: keep the lease as it is and try again
		// at the next tick (it is still valid for up to two more).
		e.log().WarnContext(ctx, "renewing lease", "submission_id", h.sub.ID, "error", err)
		return true
	}
}

// look reads the record between heartbeats: if another writer moved it —
// a cancel was requested, or the lease was broken or taken over — the work
// stops now instead of at the next renewal. false when the holder must
// stop watching.
func (h *holder) look(ctx context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, err := h.e.Journal.GetSubmission(ctx, h.sub.ID)
	if err != nil || cur.Version == h.sub.Version {
		return ctx.Err() == nil // unchanged, or unknown for now: look again
	}
	cause := errLeaseLost
	if cur.Cancel != nil {
		cause = ErrCancelled
	}
	h.lost = fmt.Errorf("submission %s moved to version %d while held at %d (%v): %w", h.sub.ID, cur.Version, h.sub.Version, cause, contracts.ErrConflict)
	h.e.log().InfoContext(ctx, "stopping work", "session_id", h.sub.SessionID, "submission_id", h.sub.ID, "step", h.sub.Step, "phase", h.sub.Phase, "why", cause)
	h.cancel(cause)
	return false
}

// release stops the heartbeat and returns the latest record, on whose
// version the handler's next write is conditional — or an error wrapping
// contracts.ErrConflict when the lease was lost meanwhile (the caller
// stops: e.lost(ctx, err) is true).
func (h *holder) release() (contracts.Submission, error) {
	for _, b := range h.beats {
		b.stop() // no renewal or look runs after this
	}
	h.cancel(nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.sub, fmt.Errorf("submission %s: %w", h.sub.ID, h.lost)
	}
	return h.sub, nil
}

// carry takes the lease of next's phase in the closing write that
// advanced to it, when its message was handed to this process's worker
// (Deps.Chain): that phase then starts holding it, one write fewer. A
// crash after the write leaves a lease of a dead owner, which lapses (or
// the next boot breaks) like any other.
func (e *Engine) carry(ctx context.Context, next contracts.Submission) error {
	if e.Chain == nil || !e.Chain.Claimed(ctx) {
		return nil
	}
	inv, now := e.invocation(), e.now()
	leased, err := journal.Lease(ctx, e.Journal, next, inv, now, e.leaseTTL(), e.leaseMutation(next.Phase, now, false))
	if e.lost(ctx, err) {
		return nil // the phase takes its own
	}
	if err != nil {
		return err
	}
	e.Chain.Handoff(ctx, inv, &leased)
	return nil
}

// chained returns the lease owner under which next's phase is advanced
// to, when the closing write's send to queue will hand its message to
// this process's worker (Deps.Chain): the advance then carries that
// phase's lease (journal.AdvanceLeased) and handOver gives it on. "" when
// it will not: a plain advance.
func (e *Engine) chained(ctx context.Context, queue string) string {
	if e.Chain == nil || !e.Chain.Claims(ctx, queue) {
		return ""
	}
	return e.invocation()
}

// advance writes next over cur, under the lease of owner when chained
// gave one.
func (e *Engine) advance(ctx context.Context, cur, next contracts.Submission, owner string) (contracts.Submission, error) {
	now := e.now()
	if owner == "" {
		return journal.Advance(ctx, e.Journal, cur, next, now)
	}
	return journal.AdvanceLeased(ctx, e.Journal, cur, next, now, owner, e.leaseTTL(), e.leaseMutation(next.Phase, now, false))
}

// handOver gives the lease the advance carried (owner) to the phase its
// send handed to this worker. Not handed after all — the session's group
// had another message waiting on that queue — the lease is given up again
// (the record as a plain advance leaves it), so whoever receives the
// message takes its own at once rather than after the TTL.
func (e *Engine) handOver(ctx context.Context, sub, plain contracts.Submission, owner string) error {
	if owner == "" {
		return e.carry(ctx, sub)
	}
	if e.Chain.Claimed(ctx) {
		e.Chain.Handoff(ctx, owner, &sub)
		return nil
	}
	back := sub
	back.LeaseOwner, back.LeaseUntil = "", time.Time{}
	back.Attempt, back.StreamKey = sub.Attempt-1, plain.StreamKey
	_, err := journal.Update(ctx, e.Journal, sub, back, e.now())
	if e.lost(ctx, err) {
		return nil
	}
	return err
}

// handRecord gives sub, the record the closing batch wrote, to the next
// phase's run when the batch's send was claimed for this worker.
func (e *Engine) handRecord(ctx context.Context, sub contracts.Submission) {
	if e.Chain != nil && e.Chain.Claimed(ctx) {
		e.Chain.Handoff(ctx, "", &sub)
	}
}

// movedOn reports, inside a batch (Deps.Batch) and where the journal can
// say (contracts.SubmissionVersioner), whether sub's stored version is no
// longer the one this phase holds — a takeover or a cancel since — so its
// conditional advance in this same transaction would lose. A model phase
// asks before it writes its node: written, a node would stay although the
// advance lost, and the next attempt's node of the same id (another
// answer) would be ignored (create-if-absent). Call by call there is no
// transaction to ask in, and moved is false.
func (e *Engine) movedOn(ctx context.Context, sub contracts.Submission) (bool, error) {
	v, can := e.Journal.(contracts.SubmissionVersioner)
	if !can || !e.inBatch(ctx) {
		return false, nil
	}
	cur, err := v.SubmissionVersion(ctx, sub.ID)
	if errors.Is(err, contracts.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the version of submission %s: %w", sub.ID, err)
	}
	if cur == sub.Version {
		return false, nil
	}
	// counted and traced as the conditional write it spares would have been
	return e.lost(ctx, fmt.Errorf("submission %s is at version %d, this phase holds %d: %w", sub.ID, cur, sub.Version, contracts.ErrConflict)), nil
}

// origin readies ctx for a write outside any handler whose send this
// process's worker may run next (Chainer.Origin); call the function
// returned once the write ended.
func (e *Engine) origin(ctx context.Context) (context.Context, func()) {
	if e.Chain == nil || e.Batch == nil {
		return ctx, func() {}
	}
	return e.Chain.Origin(ctx)
}

// carried reports whether sub is already leased for this run by the
// previous phase's closing write (carry).
func (e *Engine) carried(ctx context.Context, sub contracts.Submission) bool {
	c, _ := ctx.Value(carriedKey{}).(*handed)
	return c != nil && c.lease != "" && sub.LeaseOwner == c.lease && e.now().Before(sub.LeaseUntil)
}

// handed is what the previous phase's handler gave this run (Chainer.Carried).
type handed struct {
	lease string
	rec   *contracts.Submission
}

type carriedKey struct{}

// takeCarried takes, once per handler run, what the previous phase handed
// this delivery (Deps.Chain) into ctx.
func (e *Engine) takeCarried(ctx context.Context) context.Context {
	if e.Chain == nil {
		return ctx
	}
	lease, rec := e.Chain.Carried(ctx)
	if lease == "" && rec == nil {
		return ctx
	}
	return context.WithValue(ctx, carriedKey{}, &handed{lease: lease, rec: rec})
}

// submission reads submission id — or takes the record the previous phase's
// closing batch wrote and handed to this run with its message, when the
// journal can tell it is still current (contracts.SubmissionVersioner: a
// narrow read of its version; a cancel since the batch bumped it, and the
// record is read in full as before). Taken once.
func (e *Engine) submission(ctx context.Context, id string) (contracts.Submission, error) {
	c, _ := ctx.Value(carriedKey{}).(*handed)
	if c == nil || c.rec == nil || c.rec.ID != id {
		return e.Journal.GetSubmission(ctx, id)
	}
	rec := *c.rec
	c.rec = nil
	vs, ok := e.Journal.(contracts.SubmissionVersioner)
	if !ok {
		return e.Journal.GetSubmission(ctx, id)
	}
	if v, err := vs.SubmissionVersion(ctx, id); err != nil || v != rec.Version {
		return e.Journal.GetSubmission(ctx, id) // changed since (or unreadable): the record as stored
	}
	return rec, nil
}

// leaseMutation is what a phase's lease write also changes: a model step
// gets the stream key of its attempt (unless it reuses a completed
// stream), a tools step folds a finished park into its run time.
func (e *Engine) leaseMutation(phase contracts.Phase, now time.Time, reuse bool) func(*contracts.Submission) {
	switch phase {
	case contracts.PhaseModel:
		return func(n *contracts.Submission) {
			if !reuse {
				n.StreamKey = ids.StreamKey(n.ID, n.Step, n.Attempt)
			}
		}
	case contracts.PhaseTools:
		return func(n *contracts.Submission) { unpark(n, now) }
	}
	return nil
}
