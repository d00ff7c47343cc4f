package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/meter"
)

func rank(p contracts.Phase) int {
	switch p {
	case contracts.PhaseAccepted:
		return 0
	case contracts.PhaseModel:
		return 1
	case contracts.PhaseTools:
		return 2
	case contracts.PhaseCommit:
		return 3
	default: // terminal
		return 4
	}
}

// CheckForward returns an error wrapping contracts.ErrInvalid unless moving
// from cur to next keeps (step, phase) monotonic: a terminal record never
// changes phase, the step never decreases, and within a step the phase never
// goes back.
func CheckForward(cur, next contracts.Submission) error {
	switch {
	case cur.Phase.Terminal() && next.Phase != cur.Phase:
		return fmt.Errorf("submission %s is %s: %w", cur.ID, cur.Phase, contracts.ErrInvalid)
	case next.Step < cur.Step:
		return fmt.Errorf("submission %s: step %d → %d goes back: %w", cur.ID, cur.Step, next.Step, contracts.ErrInvalid)
	case next.Step == cur.Step && rank(next.Phase) < rank(cur.Phase):
		return fmt.Errorf("submission %s: phase %s → %s goes back: %w", cur.ID, cur.Phase, next.Phase, contracts.ErrInvalid)
	}
	return nil
}

// Advance writes next over cur, conditional on cur.Version, after checking
// the move is forward. The lease is released (the advance ends the holder's
// work). A lost race returns an error wrapping contracts.ErrConflict.
func Advance(ctx context.Context, store contracts.JournalStore, cur, next contracts.Submission, now time.Time) (contracts.Submission, error) {
	if err := CheckForward(cur, next); err != nil {
		return cur, err
	}
	next.LeaseOwner, next.LeaseUntil = "", time.Time{}
	if next.Step != cur.Step || next.Phase != cur.Phase {
		next.Attempt, next.AttemptFloor = 0, 0 // attempts count per (step, phase)
	}
	next.UpdatedAt = now
	out, err := update(ctx, store, next, cur.Version)
	if err != nil {
		return cur, fmt.Errorf("advancing submission %s to step %d %s: %w", cur.ID, next.Step, next.Phase, err)
	}
	return out, nil
}

// AdvanceLeased is Advance that also takes the lease of next's (step,
// phase) for owner until now+ttl and counts its first attempt, as Lease
// would right after — one conditional write instead of two, for a next
// phase this process runs at once (turn's chained phases). mutate is
// Lease's.
func AdvanceLeased(ctx context.Context, store contracts.JournalStore, cur, next contracts.Submission, now time.Time, owner string, ttl time.Duration, mutate func(*contracts.Submission)) (contracts.Submission, error) {
	if err := CheckForward(cur, next); err != nil {
		return cur, err
	}
	if next.Phase.Terminal() || owner == "" {
		return cur, fmt.Errorf("advancing submission %s to %s under a lease of %q: %w", cur.ID, next.Phase, owner, contracts.ErrInvalid)
	}
	if next.Step != cur.Step || next.Phase != cur.Phase {
		next.Attempt, next.AttemptFloor = 0, 0
	}
	next = leased(next, owner, now, ttl, mutate)
	out, err := update(ctx, store, next, cur.Version)
	if err != nil {
		return cur, fmt.Errorf("advancing submission %s to step %d %s: %w", cur.ID, next.Step, next.Phase, err)
	}
	return out, nil
}

// Update writes next over cur without changing (step, phase) — approvals,
// stream key — conditional on cur.Version; the lease is kept.
func Update(ctx context.Context, store contracts.JournalStore, cur, next contracts.Submission, now time.Time) (contracts.Submission, error) {
	if next.Step != cur.Step || next.Phase != cur.Phase {
		return cur, fmt.Errorf("updating submission %s: use Advance to move phase: %w", cur.ID, contracts.ErrInvalid)
	}
	next.UpdatedAt = now
	out, err := update(ctx, store, next, cur.Version)
	if err != nil {
		return cur, fmt.Errorf("updating submission %s: %w", cur.ID, err)
	}
	return out, nil
}

// Leased reports whether someone other than owner holds a live lease.
func Leased(sub contracts.Submission, owner string, now time.Time) bool {
	return sub.LeaseOwner != "" && sub.LeaseOwner != owner && now.Before(sub.LeaseUntil)
}

// Lease takes the submission's lease for owner until now+ttl and counts an
// attempt. If another owner holds a live lease, or the version moved, it
// returns an error wrapping contracts.ErrConflict: the caller stops.
// mutate, if non-nil, adjusts the record in the same write (e.g. a new
// stream key).
func Lease(ctx context.Context, store contracts.JournalStore, sub contracts.Submission, owner string, now time.Time, ttl time.Duration, mutate func(*contracts.Submission)) (contracts.Submission, error) {
	if sub.Phase.Terminal() {
		return sub, fmt.Errorf("leasing submission %s: it is %s: %w", sub.ID, sub.Phase, contracts.ErrConflict)
	}
	if Leased(sub, owner, now) {
		return sub, fmt.Errorf("leasing submission %s: held by %s until %s: %w", sub.ID, sub.LeaseOwner, sub.LeaseUntil.Format(time.RFC3339), contracts.ErrConflict)
	}
	next := leased(sub, owner, now, ttl, mutate)
	out, err := update(ctx, store, next, sub.Version)
	if err != nil {
		return sub, fmt.Errorf("leasing submission %s: %w", sub.ID, err)
	}
	return out, nil
}

// leased is next under owner's lease until now+ttl, its attempt counted,
// adjusted by mutate (Lease, AdvanceLeased).
func leased(next contracts.Submission, owner string, now time.Time, ttl time.Duration, mutate func(*contracts.Submission)) contracts.Submission {
	next.LeaseOwner, next.LeaseUntil = owner, now.Add(ttl)
	next.Attempt++
	next.UpdatedAt = now
	if mutate != nil {
		mutate(&next)
	}
	return next
}

// Renew extends owner's lease on sub to now+ttl: a conditional write like
// every other, so a holder whose record moved (its lease broken, taken over
// after it lapsed, or the turn ended by someone else) gets an error
// wrapping contracts.ErrConflict and must stop. It counts no attempt.
func Renew(ctx context.Context, store contracts.JournalStore, sub contracts.Submission, owner string, now time.Time, ttl time.Duration) (contracts.Submission, error) {
	if sub.LeaseOwner != owner || sub.Phase.Terminal() {
		return sub, fmt.Errorf("renewing lease of submission %s: not held by %s: %w", sub.ID, owner, contracts.ErrConflict)
	}
	next := sub
	next.LeaseUntil = now.Add(ttl) // UpdatedAt stays: a renewal is not progress (and moves no index key)
	out, err := update(ctx, store, next, sub.Version)
	if err != nil {
		return sub, fmt.Errorf("renewing lease of submission %s: %w", sub.ID, err)
	}
	return out, nil
}

// Break clears a lease held by an owner known to be dead (a previous boot
// of the single embedded process). Conditional like every write.
func Break(ctx context.Context, store contracts.JournalStore, sub contracts.Submission, now time.Time) (contracts.Submission, error) {
	next := sub
	next.LeaseOwner, next.LeaseUntil = "", time.Time{}
	next.UpdatedAt = now
	out, err := update(ctx, store, next, sub.Version)
	if err != nil {
		return sub, fmt.Errorf("breaking lease of submission %s: %w", sub.ID, err)
	}
	return out, nil
}

// Reopen writes next, a retry of the FAILED cur waiting ACCEPTED to resume
// (next.Resume names the phase), conditional on cur.Version. It is the one
// write that leaves a terminal phase, and only FAILED → ACCEPTED.
func Reopen(ctx context.Context, store contracts.JournalStore, cur, next contracts.Submission, now time.Time) (contracts.Submission, error) {
	if cur.Phase != contracts.PhaseFailed || next.Phase != contracts.PhaseAccepted || next.Resume == "" || next.Step != cur.Step {
		return cur, fmt.Errorf("reopening submission %s: only a FAILED turn is retried, to ACCEPTED at its step: %w", cur.ID, contracts.ErrInvalid)
	}
	next.LeaseOwner, next.LeaseUntil = "", time.Time{}
	next.UpdatedAt = now
	out, err := update(ctx, store, next, cur.Version)
	if err != nil {
		return cur, fmt.Errorf("reopening submission %s: %w", cur.ID, err)
	}
	return out, nil
}

// Resume moves a retried cur (ACCEPTED, Resume set) to the phase it
// resumes at its step, keeping its attempt count as the new AttemptFloor
// (attempt numbers, and the stream and event keys made from them, never
// repeat), conditional on cur.Version.
func Resume(ctx context.Context, store contracts.JournalStore, cur contracts.Submission, now time.Time) (contracts.Submission, error) {
	if cur.Phase != contracts.PhaseAccepted || cur.Resume == "" || cur.Resume.Terminal() {
		return cur, fmt.Errorf("resuming submission %s: it is not a retry waiting to resume: %w", cur.ID, contracts.ErrInvalid)
	}
	next := cur
	next.Phase, next.Resume, next.AttemptFloor = cur.Resume, "", cur.Attempt
	next.LeaseOwner, next.LeaseUntil = "", time.Time{}
	next.UpdatedAt = now
	out, err := update(ctx, store, next, cur.Version)
	if err != nil {
		return cur, fmt.Errorf("resuming submission %s at step %d %s: %w", cur.ID, cur.Step, cur.Resume, err)
	}
	return out, nil
}

// update is every conditional write of a record here. A terminal one —
// and one of a parked turn or a turn being cancelled, which may wait
// without a message — records the turn's metered orchestration
// (shared/meter: carried from run to run in the messages until then, so
// the running record does not grow), given back to the run if the write
// fails.
func update(ctx context.Context, store contracts.JournalStore, next contracts.Submission, version int64) (contracts.Submission, error) {
	undo := func() {}
	// A parked turn and one whose cancel was requested may send no message
	// before their next write: their writes record the tally too.
	if next.Phase.Terminal() || !next.ParkedAt.IsZero() || next.Cancel != nil {
		undo = meter.Fold(ctx, &next)
	}
	out, err := store.UpdateSubmission(ctx, next, version)
	if err != nil {
		undo()
	}
	return out, err
}
