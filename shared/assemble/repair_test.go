package assemble_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

type inProcess struct{}

func (inProcess) Evaluate(ctx context.Context, req contracts.EvalRequest) (contracts.EvalResponse, error) {
	return script.Evaluate(ctx, req), nil
}

// RepairAll (the repair function's handler and RepairLoop's pass) also
// wakes workflow runs stuck for Config.StuckAfter.
func TestRepairAllWakesStuckRuns(t *testing.T) {
	var store contracts.WorkflowStore
	h := enginetest.New(t, func(p *assemble.Ports) {
		store = p.Journal.(*sqlite.Store).Workflows()
		p.Workflows, p.Evaluator = store, inProcess{}
	})
	ctx := context.Background()
	src := `result = agent("tick", model="scripted:plain").output`
	now := h.Clock.Now()
	run, _, err := store.CreateRun(ctx, contracts.WorkflowRun{ID: "run_1", WorkflowID: "wf_1", Script: src,
		Status: contracts.RunRunning, StartedAt: now, UpdatedAt: now}) // its creator died before waking it
	if err != nil {
		t.Fatal(err)
	}
	h.RT.StuckAfter = 5 * time.Minute
	h.Clock.Advance(2 * time.Minute) // stuck by the default, not by the configured 5 minutes
	if rep, err := h.RT.RepairAll(ctx); err != nil || rep.RunsWoken != 0 {
		t.Fatalf("RepairAll = %+v, %v; want no run woken before StuckAfter", rep, err)
	}
	h.Clock.Advance(4 * time.Minute)
	if rep, err := h.RT.RepairAll(ctx); err != nil || rep.RunsWoken != 1 {
		t.Fatalf("RepairAll = %+v, %v; want the stuck run woken", rep, err)
	}
	h.Drain()
	if got, err := store.GetRun(ctx, run.ID); err != nil || got.Status != contracts.RunSucceeded {
		t.Fatalf("run %+v, %v; want SUCCEEDED", got, err)
	}
}

func TestRepairAllWithoutWorkflows(t *testing.T) {
	h := enginetest.New(t)
	if rep, err := h.RT.RepairAll(context.Background()); err != nil || rep.RunsWoken != 0 {
		t.Fatalf("RepairAll = %+v, %v", rep, err)
	}
}
