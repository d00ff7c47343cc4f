package schedule_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

// runs is a fake Fire that does what the real one must: create the run
// create-if-absent under ids.ScheduledRun.
type runs struct {
	mu    sync.Mutex
	byID  map[string]contracts.WorkflowRun
	fires int
	fail  error // returned by Fire while set
}

func newRuns() *runs { return &runs{byID: map[string]contracts.WorkflowRun{}} }

func (r *runs) Fire(_ context.Context, s contracts.Schedule, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.fires++
	id := ids.ScheduledRun(s.ID, at)
	if _, ok := r.byID[id]; !ok {
		r.byID[id] = contracts.WorkflowRun{ID: id, WorkflowID: s.WorkflowID, ScheduleID: s.ID, ScheduledAt: at}
	}
	return nil
}

// times returns the scheduled times of a schedule's runs, sorted.
func (r *runs) times(scheduleID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, run := range r.byID {
		if run.ScheduleID == scheduleID {
			out = append(out, run.ScheduledAt.Format("15:04"))
		}
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func list(ss ...contracts.Schedule) func(context.Context) ([]contracts.Schedule, error) {
	return func(context.Context) ([]contracts.Schedule, error) { return ss, nil }
}

// t0 is 2026-11-29T12:00:00Z (enginetest.Start).
var t0 = enginetest.Start

func tick(t *testing.T, tk *schedule.Ticker, want int) {
	t.Helper()
	n, err := tk.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("Tick fired %d, want %d", n, want)
	}
}

func TestTickerFiresDueTimes(t *testing.T) {
	clock := enginetest.NewClock(t0)
	r := newRuns()
	every15 := contracts.Schedule{ID: "sch_a", WorkflowID: "wf", Expression: "cron(0/15 * * * ? *)", CreatedAt: t0.Add(-time.Minute)}
	rate := contracts.Schedule{ID: "sch_b", WorkflowID: "wf", Expression: "rate(10 minutes)", CreatedAt: t0.Add(-5 * time.Minute)}
	tk := &schedule.Ticker{List: list(every15, rate), Fire: r.Fire, Clock: clock}

	tick(t, tk, 1) // 12:00 (cron) is due: it fell after the schedule's creation
	tick(t, tk, 0) // nothing new
	clock.Advance(4*time.Minute + 59*time.Second)
	tick(t, tk, 0)
	clock.Advance(time.Second) // 12:05: the rate's first period
	tick(t, tk, 1)
	clock.Advance(40 * time.Minute) // 12:45
	tick(t, tk, 3+4)                // cron 12:15 12:30 12:45; rate 12:15 12:25 12:35 12:45

	if got, want := fmt.Sprint(r.times("sch_a")), "[12:00 12:15 12:30 12:45]"; got != want {
		t.Errorf("cron runs %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(r.times("sch_b")), "[12:05 12:15 12:25 12:35 12:45]"; got != want {
		t.Errorf("rate runs %s, want %s", got, want)
	}
	if r.fires != 9 {
		t.Errorf("Fire called %d times, want 9", r.fires)
	}
}

func TestTickerDuplicateFiringIsOneRun(t *testing.T) {
	clock := enginetest.NewClock(t0)
	r := newRuns()
	s := contracts.Schedule{ID: "sch_dup", WorkflowID: "wf", Expression: "cron(* * * * ? *)", CreatedAt: t0}
	first := &schedule.Ticker{List: list(s), Fire: r.Fire, Clock: clock}
	clock.Advance(3 * time.Minute)
	tick(t, first, 3)

	// A restarted `cairn dev` (a new Ticker, nothing in memory) catches up
	// from CreatedAt and fires the same three times again, and a direct
	// duplicate firing of 12:01 happens too: still one run per time.
	restarted := &schedule.Ticker{List: list(s), Fire: r.Fire, Clock: clock}
	tick(t, restarted, 3)
	if err := r.Fire(context.Background(), s, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r.fires != 7 || len(r.byID) != 3 {
		t.Fatalf("%d firings made %d runs, want 7 firings and 3 runs", r.fires, len(r.byID))
	}
	if got, want := fmt.Sprint(r.times(s.ID)), "[12:01 12:02 12:03]"; got != want {
		t.Errorf("runs at %s, want %s", got, want)
	}
}

func TestTickerCatchUpIsBounded(t *testing.T) {
	for _, expr := range []string{"rate(1 minute)", "cron(* * * * ? *)"} {
		t.Run(expr, func(t *testing.T) {
			clock := enginetest.NewClock(t0)
			r := newRuns()
			s := contracts.Schedule{ID: "sch_c", WorkflowID: "wf", Expression: expr, CreatedAt: t0}
			var logs bytes.Buffer
			tk := &schedule.Ticker{List: list(s), Fire: r.Fire, Clock: clock, MaxCatchUp: 3, Log: slog.New(slog.NewTextHandler(&logs, nil))}
			clock.Advance(2 * time.Minute)
			tick(t, tk, 2)
			clock.Advance(10 * 24 * time.Hour) // asleep for ten days
			tick(t, tk, 3)                     // only the last three
			clock.Advance(time.Minute)
			tick(t, tk, 1)
			// 11-29 12:01 and 12:02, then 12-09 12:00 12:01 12:02 (the
			// older missed ones skipped), then 12-09 12:03.
			later := t0.Add(10 * 24 * time.Hour)
			for _, at := range []time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute), later, later.Add(time.Minute), later.Add(2 * time.Minute), later.Add(3 * time.Minute)} {
				if _, ok := r.byID[ids.ScheduledRun(s.ID, at)]; !ok {
					t.Errorf("no run at %s", at)
				}
			}
			if len(r.byID) != 6 {
				t.Errorf("%d runs, want 6", len(r.byID))
			}
			if want := "schedule_id=sch_c skipped=14397 "; !strings.Contains(logs.String(), want) { // 10·24·60 − 3
				t.Errorf("log %q lacks %q", logs.String(), want)
			}
		})
	}
	// The default bound is DefaultMaxCatchUp.
	clock := enginetest.NewClock(t0)
	r := newRuns()
	tk := &schedule.Ticker{List: list(contracts.Schedule{ID: "sch_d", Expression: "rate(1 minute)", CreatedAt: t0}), Fire: r.Fire, Clock: clock}
	clock.Advance(time.Hour)
	tick(t, tk, schedule.DefaultMaxCatchUp)
}

func TestTickerErrors(t *testing.T) {
	clock := enginetest.NewClock(t0)
	r := newRuns()
	good := contracts.Schedule{ID: "sch_ok", Expression: "cron(* * * * ? *)", CreatedAt: t0}
	bad := contracts.Schedule{ID: "sch_bad", Expression: "cron(* * * * * *)", CreatedAt: t0}
	tk := &schedule.Ticker{List: list(bad, good), Fire: r.Fire, Clock: clock}
	clock.Advance(2 * time.Minute)

	// A bad expression does not stop the other schedules.
	n, err := tk.Tick(context.Background())
	if n != 2 || !errors.Is(err, contracts.ErrInvalid) || !strings.Contains(err.Error(), "sch_bad") {
		t.Fatalf("Tick = %d, %v; want 2 and sch_bad's ErrInvalid", n, err)
	}

	// A failing Fire is retried on the next tick, from the failed firing.
	boom := errors.New("store down")
	r.fail = boom
	clock.Advance(2 * time.Minute)
	if n, err := tk.Tick(context.Background()); n != 0 || !errors.Is(err, boom) {
		t.Fatalf("Tick = %d, %v; want 0 and the Fire error", n, err)
	}
	r.fail = nil
	tk.List = list(good)
	tick(t, tk, 2)
	if got, want := fmt.Sprint(r.times(good.ID)), "[12:01 12:02 12:03 12:04]"; got != want {
		t.Errorf("runs at %s, want %s", got, want)
	}

	// A List failure is returned.
	tk.List = func(context.Context) ([]contracts.Schedule, error) { return nil, boom }
	if _, err := tk.Tick(context.Background()); !errors.Is(err, boom) {
		t.Errorf("Tick = %v, want the List error", err)
	}
}

func TestTickerZeroCreatedAtStartsNow(t *testing.T) {
	clock := enginetest.NewClock(t0.Add(30 * time.Second))
	r := newRuns()
	tk := &schedule.Ticker{List: list(contracts.Schedule{ID: "sch_z", Expression: "cron(* * * * ? *)"}), Fire: r.Fire, Clock: clock}
	tick(t, tk, 0)
	clock.Advance(30 * time.Second)
	tick(t, tk, 1)
}

func TestTickerRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRuns()
		start := time.Now().UTC().Truncate(time.Minute)
		s := contracts.Schedule{ID: "sch_run", Expression: "rate(1 minute)", CreatedAt: start}
		tk := &schedule.Ticker{List: list(s), Fire: r.Fire} // the system clock: fake inside the bubble
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tk.Run(ctx, 30*time.Second) }()
		time.Sleep(5*time.Minute + time.Second) // virtual time
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
		if len(r.byID) != 5 {
			t.Errorf("%d runs after five minutes, want 5", len(r.byID))
		}
	})
}

func TestTickerRunRefusesZeroInterval(t *testing.T) {
	tk := &schedule.Ticker{List: list(), Fire: newRuns().Fire}
	if err := tk.Run(t.Context(), 0); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("Run(0) = %v, want ErrInvalid", err)
	}
}

func ExampleTicker() {
	clock := enginetest.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	s := contracts.Schedule{ID: "sch_1", WorkflowID: "wf_1", Expression: "rate(5 minutes)", CreatedAt: clock.Now()}
	tk := &schedule.Ticker{
		List: func(context.Context) ([]contracts.Schedule, error) { return []contracts.Schedule{s}, nil },
		Fire: func(_ context.Context, s contracts.Schedule, at time.Time) error {
			fmt.Println("start run", ids.ScheduledRun(s.ID, at) != "", "at", at.Format("15:04"))
			return nil
		},
		Clock: clock,
	}
	clock.Advance(12 * time.Minute)
	n, err := tk.Tick(context.Background())
	fmt.Println(n, err)
	// Output:
	// start run true at 12:05
	// start run true at 12:10
	// 2 <nil>
}
