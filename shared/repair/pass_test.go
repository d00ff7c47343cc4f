package repair_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// A pass (the repair function's handler and Loop's tick) also wakes
// workflow runs stuck for StuckAfter.
func TestPassWakesStuckRuns(t *testing.T) {
	h := enginetest.New(t, enginetest.Workflows(&enginetest.InProcess{}, nil))
	store := h.RT.Ports.Workflows
	ctx := context.Background()
	src := `result = agent("tick", model="scripted:plain").output`
	now := h.Clock.Now()
	run, _, err := store.CreateRun(ctx, contracts.WorkflowRun{ID: "run_1", WorkflowID: "wf_1", Script: src,
		Status: contracts.RunRunning, StartedAt: now, UpdatedAt: now}) // its creator died before waking it
	if err != nil {
		t.Fatal(err)
	}
	h.RT.Repair.StuckAfter = 5 * time.Minute
	h.Clock.Advance(2 * time.Minute) // stuck by the default, not by the configured 5 minutes
	if rep, err := h.RT.Repair.Run(ctx); err != nil || rep.RunsWoken != 0 {
		t.Fatalf("repair pass = %+v, %v; want no run woken before StuckAfter", rep, err)
	}
	h.Clock.Advance(4 * time.Minute)
	if rep, err := h.RT.Repair.Run(ctx); err != nil || rep.RunsWoken != 1 {
		t.Fatalf("repair pass = %+v, %v; want the stuck run woken", rep, err)
	}
	h.Drain()
	if got, err := store.GetRun(ctx, run.ID); err != nil || got.Status != contracts.RunSucceeded {
		t.Fatalf("run %+v, %v; want SUCCEEDED", got, err)
	}
}

func TestPassWithoutWorkflows(t *testing.T) {
	h := enginetest.New(t)
	if rep, err := h.RT.Repair.Run(context.Background()); err != nil || rep.RunsWoken != 0 {
		t.Fatalf("repair pass = %+v, %v", rep, err)
	}
}

// The repair function's invocation (Passes) ends after one pass when
// nothing is unfinished, however far its deadline: an idle deployment pays
// for one pass a minute. (Were it to go on, every=1ms up to a two-hour
// deadline would hang the test.)
func TestPassesEndEarlyWhenIdle(t *testing.T) {
	h := enginetest.New(t, enginetest.Workflows(&enginetest.InProcess{}, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	rep, err := h.RT.Repair.Passes(ctx, time.Millisecond)
	if err != nil || rep.Scanned != 0 || rep.RunsScanned != 0 {
		t.Fatalf("Passes = %+v, %v", rep, err)
	}
}

// Without a deadline (a test, a direct call) Passes makes exactly one pass.
func TestPassesWithoutDeadlineIsOnePass(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	sub := h.Accept("scripted:plain")
	h.Lose(contracts.QueueModel)
	h.Clock.Advance(2 * time.Minute)
	rep, err := h.RT.Repair.Passes(context.Background(), time.Millisecond)
	if err != nil || rep.Scanned != 1 || rep.Redriven != 1 {
		t.Fatalf("Passes = %+v, %v; want one pass re-driving %s", rep, err, sub.ID)
	}
}
