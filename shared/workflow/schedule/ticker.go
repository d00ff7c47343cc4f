package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// DefaultMaxCatchUp is how many missed firings per schedule a Tick fires
// when Ticker.MaxCatchUp is zero.
const DefaultMaxCatchUp = 10

// Ticker fires schedules in-process, for `cairn dev` (on AWS, EventBridge
// Scheduler does it). Each Tick fires every firing that fell due since the
// previous one, oldest first.
//
// It remembers the last fired time per schedule in memory only. A schedule
// it has not seen before (including after a restart) is caught up from its
// CreatedAt (or from now when CreatedAt is zero), at most MaxCatchUp
// firings, the most recent ones: older missed firings are skipped and
// logged. Firing again what fired before a restart is harmless: Fire must
// derive the run id from (schedule id, time) with ids.ScheduledRun and
// create the run create-if-absent, so a duplicate firing is the same run.
//
// A paused schedule fires nothing, and once resumed it fires only what
// falls due after its UpdatedAt (the resume): the firings it missed while
// paused are skipped, not caught up. A schedule no longer listed (deleted)
// is forgotten. Fire must still check the store itself (Driver.Fire does):
// a schedule paused or deleted between List and Fire must start nothing.
//
// Fields are set before the first Tick; Tick and Run may be called from
// several goroutines (ticks are serialized).
type Ticker struct {
	// List returns the schedules to run (WorkflowStore.ListSchedules).
	List func(ctx context.Context) ([]contracts.Schedule, error)
	// Fire starts the run of s scheduled at at (UTC). An error stops that
	// schedule's catch-up; the firing is retried on the next Tick.
	Fire func(ctx context.Context, s contracts.Schedule, at time.Time) error
	// Clock gives the time (nil: the system clock).
	Clock contracts.Clock
	// MaxCatchUp bounds the firings per schedule per Tick (0:
	// DefaultMaxCatchUp).
	MaxCatchUp int
	// Log receives skipped firings and the errors Run carries on past
	// (nil: discarded).
	Log *slog.Logger

	mu   sync.Mutex
	last map[string]time.Time // schedule id → last fired (or start) time
}

// Tick fires every due firing of every listed schedule and returns how many
// it fired. A schedule whose expression does not parse or whose Fire fails
// does not stop the others; their errors are joined.
func (t *Ticker) Tick(ctx context.Context) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	clock := t.Clock
	if clock == nil {
		clock = contracts.WallClock{}
	}
	list, err := t.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing schedules: %w", err)
	}
	now := clock.Now().UTC()
	if t.last == nil {
		t.last = make(map[string]time.Time)
	}
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		seen[s.ID] = true
	}
	fired := 0
	var errs []error
	for _, s := range list {
		n, err := t.tickOne(ctx, s, now)
		fired += n
		if err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	for id := range t.last {
		if !seen[id] {
			delete(t.last, id) // deleted schedule
		}
	}
	return fired, errors.Join(errs...)
}

// tickOne fires the due firings of one schedule.
func (t *Ticker) tickOne(ctx context.Context, s contracts.Schedule, now time.Time) (int, error) {
	e, err := Parse(s.Expression)
	if err != nil {
		return 0, fmt.Errorf("schedule %s: %w", s.ID, err)
	}
	since, ok := t.last[s.ID]
	if !ok {
		since = s.CreatedAt.UTC()
		if s.CreatedAt.IsZero() {
			since = now
		}
		t.last[s.ID] = since
	}
	if s.Paused {
		return 0, nil // fires nothing; what falls due meanwhile is skipped (below)
	}
	if u := s.UpdatedAt.UTC(); u.After(since) {
		// Changed (resumed) since: what fell due before, while it was
		// paused, is not fired — EventBridge does not catch a DISABLED
		// schedule up either.
		since = u
		t.last[s.ID] = u
	}
	due, skipped := dueFirings(e, s.CreatedAt, since, now, t.maxCatchUp())
	if skipped > 0 && len(due) > 0 && t.Log != nil {
		t.Log.WarnContext(ctx, "schedule catch-up bounded: older firings skipped",
			"schedule_id", s.ID, "skipped", skipped, "first_fired", due[0])
	}
	fired := 0
	for _, at := range due {
		if err := t.Fire(ctx, s, at); err != nil {
			return fired, fmt.Errorf("firing schedule %s at %s: %w", s.ID, at.Format(time.RFC3339), err)
		}
		t.last[s.ID] = at
		fired++
	}
	return fired, nil
}

func (t *Ticker) maxCatchUp() int {
	if t.MaxCatchUp > 0 {
		return t.MaxCatchUp
	}
	return DefaultMaxCatchUp
}

// dueFirings returns the last max firings in (since, now], oldest first,
// and how many earlier ones it left out.
func dueFirings(e Expr, anchor, since, now time.Time, max int) ([]time.Time, int) {
	skipped := 0
	if p, ok := e.Rate(); ok {
		// Jump straight to the last max periods: a long sleep must not
		// cost one step per missed firing.
		if gap := now.Sub(since); gap/time.Duration(max+1) > p {
			start := now.Add(-time.Duration(max+1) * p)
			skipped = countBetween(e, anchor, since, start)
			since = start
		}
	}
	ring := make([]time.Time, max) // the last max firings seen; n counts all
	n := 0
	for at := e.Next(anchor, since); !at.IsZero() && !at.After(now); at = e.Next(anchor, at) {
		ring[n%max] = at
		n++
	}
	if n <= max {
		return ring[:n], skipped
	}
	due := make([]time.Time, 0, max) // oldest first: the ring from its next slot
	due = append(due, ring[n%max:]...)
	due = append(due, ring[:n%max]...)
	return due, skipped + n - max
}

// countBetween counts a rate expression's firings in (from, to].
func countBetween(e Expr, anchor, from, to time.Time) int {
	p, _ := e.Rate()
	first := e.Next(anchor, from)
	if first.After(to) {
		return 0
	}
	return int(to.Sub(first)/p) + 1
}

// Run ticks now and then every interval until ctx ends, logging what a Tick
// returns as an error, and returns ctx's error.
func (t *Ticker) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("schedule ticker interval %v: want > 0: %w", every, contracts.ErrInvalid)
	}
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		if _, err := t.Tick(ctx); err != nil && t.Log != nil && ctx.Err() == nil {
			t.Log.ErrorContext(ctx, "schedule tick", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tk.C:
		}
	}
}
