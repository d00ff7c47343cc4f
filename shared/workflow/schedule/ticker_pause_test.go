package schedule_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

// stored is a schedule list a test edits between ticks, as pause, resume
// and delete edit the store.
type stored struct {
	mu sync.Mutex
	ss []contracts.Schedule
}

func (s *stored) list(context.Context) ([]contracts.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]contracts.Schedule(nil), s.ss...), nil
}

func (s *stored) set(ss ...contracts.Schedule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ss = ss
}

// A paused schedule fires nothing; resumed, it fires what falls due after
// the resume only — also for a restarted ticker catching up — and a
// deleted one fires nothing.
func TestTickerSkipsPausedAndDeletedSchedules(t *testing.T) {
	clock := enginetest.NewClock(t0)
	r := newRuns()
	s := contracts.Schedule{ID: "sch_p", WorkflowID: "wf", Expression: "cron(* * * * ? *)", CreatedAt: t0}
	st := &stored{}
	st.set(s)
	tk := &schedule.Ticker{List: st.list, Fire: r.Fire, Clock: clock}
	clock.Advance(2 * time.Minute)
	tick(t, tk, 2) // 12:01 12:02

	paused := s
	paused.Paused, paused.UpdatedAt = true, t0.Add(2*time.Minute+30*time.Second)
	st.set(paused)
	clock.Advance(3 * time.Minute) // 12:05
	tick(t, tk, 0)

	resumed := paused
	resumed.Paused, resumed.UpdatedAt = false, t0.Add(5*time.Minute+30*time.Second)
	st.set(resumed)
	tick(t, tk, 0)                 // 12:03 12:04 12:05 fell due while paused: skipped, not caught up
	clock.Advance(2 * time.Minute) // 12:07
	tick(t, tk, 2)                 // 12:06 12:07

	// A restarted ticker catches up from the resume, not from CreatedAt.
	restarted := &schedule.Ticker{List: st.list, Fire: r.Fire, Clock: clock}
	tick(t, restarted, 2) // 12:06 12:07 again: the same runs
	if got, want := fmt.Sprint(r.times(s.ID)), "[12:01 12:02 12:06 12:07]"; got != want {
		t.Errorf("runs at %s, want %s", got, want)
	}

	st.set() // deleted
	clock.Advance(5 * time.Minute)
	tick(t, tk, 0)
	tick(t, restarted, 0)
	if got, want := fmt.Sprint(r.times(s.ID)), "[12:01 12:02 12:06 12:07]"; got != want {
		t.Errorf("after the delete: runs at %s, want %s", got, want)
	}
}
