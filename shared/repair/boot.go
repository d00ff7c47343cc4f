package repair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
	"github.com/cairnrun/cairn/shared/turn"
)

// Loop makes a pass (Run) every period until ctx ends, logging what each
// pass did: the repair function's schedule, in process (`cairn dev`).
func (r *Repairer) Loop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rep, err := r.Run(ctx)
			if err != nil && ctx.Err() == nil {
				r.log().WarnContext(ctx, "repair pass", "error", err)
			}
			if rep.Any() {
				r.log().InfoContext(ctx, "repair pass", "redriven", rep.Redriven, "started", rep.Started, "failed", rep.Failed,
					"expired", rep.Expired, "poison", rep.Poison, "runs_woken", rep.RunsWoken, "runs_poisoned", rep.RunsPoisoned)
			}
		}
	}
}

// DefaultPassEvery is how often Passes makes a pass.
const DefaultPassEvery = 10 * time.Second

// passMargin is the time a pass is given before ctx's deadline: Passes
// starts no pass later than that.
const passMargin = 15 * time.Second

// Passes makes a pass (Run) every every (0 = DefaultPassEvery) until ctx's
// deadline is less than a pass away — the repair function's handler: it is
// invoked once a minute (the finest EventBridge schedule), so passing every
// few seconds within the invocation keeps recovery from waiting for the
// schedule. Without a deadline it makes one pass; a pass that finds
// nothing unfinished (no submission, no run) and no dead letter ends the
// invocation early, so an idle deployment pays for one pass a minute. The
// report sums the passes; the errors of every pass are joined.
func (r *Repairer) Passes(ctx context.Context, every time.Duration) (Report, error) {
	if every <= 0 {
		every = DefaultPassEvery
	}
	var total Report
	var errs []error
	for {
		rep, err := r.Run(ctx)
		total.add(rep)
		if err != nil {
			errs = append(errs, err)
		}
		idle := rep.Scanned == 0 && rep.RunsScanned == 0 && rep.Poison == 0 && rep.RunsPoisoned == 0
		deadline, ok := ctx.Deadline()
		if idle || !ok || time.Until(deadline) < every+passMargin {
			return total, errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return total, errors.Join(errs...)
		case <-time.After(every):
		}
	}
}

// Boot recovers what a previous process left when this one owns all the
// work (the embedded backend holds its data directory's lock, so every
// other lease owner is a boot that died): it breaks every foreign lease,
// releases the queue's in-flight messages (release; nil = none to
// release) and re-drives every unfinished submission at once, without
// waiting StuckAfter — a kill -9 is recovered immediately on restart.
// Workflow runs are left to the regular passes.
func (r *Repairer) Boot(ctx context.Context, owner string, release func(context.Context) error) error {
	n, err := r.BreakForeignLeases(ctx, owner)
	if err != nil {
		return fmt.Errorf("boot recovery: %w", err)
	}
	if release != nil {
		if err := release(ctx); err != nil {
			return fmt.Errorf("boot recovery: %w", err)
		}
	}
	eager := &Repairer{Engine: r.Engine, StuckAfter: time.Nanosecond, Batch: r.Batch}
	rep, err := eager.Submissions(ctx)
	if err != nil {
		return fmt.Errorf("boot recovery: %w", err)
	}
	if n+rep.Redriven+rep.Started+rep.Failed+rep.Poison > 0 {
		r.log().InfoContext(ctx, "boot recovery", "leases_broken", n, "redriven", rep.Redriven, "started", rep.Started, "failed", rep.Failed, "poison", rep.Poison)
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
