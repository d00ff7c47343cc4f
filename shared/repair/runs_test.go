package repair_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

const oneNode = `result = agent("tick", model="scripted:plain").output`

// world is a harness serving workflows, evaluated in process.
type world struct {
	h     *enginetest.Harness
	store contracts.WorkflowStore
	eval  *enginetest.InProcess
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{eval: &enginetest.InProcess{}}
	w.h = enginetest.New(t, enginetest.Workflows(w.eval, nil))
	w.h.RT.Workers.Chain = nil // steps runs through the queues, loses and peeks at messages
	w.store = w.h.RT.Ports.Workflows
	return w
}

// created stores a RUNNING run directly, as a creator that died before
// sending its first wake-up leaves it.
func (w *world) created(t *testing.T, evaluations int) contracts.WorkflowRun {
	t.Helper()
	ctx := context.Background()
	wf, err := w.store.CreateWorkflow(ctx, contracts.Workflow{ID: "wf_" + t.Name(), Name: "t", Script: oneNode})
	if err != nil {
		t.Fatal(err)
	}
	now := w.h.Clock.Now()
	run, _, err := w.store.CreateRun(ctx, contracts.WorkflowRun{
		ID: "run_" + t.Name(), WorkflowID: wf.ID, Script: wf.Script, Status: contracts.RunRunning,
		Evaluations: evaluations, StartedAt: now, UpdatedAt: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// repair makes one repair pass and returns how many runs it woke.
func (w *world) repair(t *testing.T) int {
	t.Helper()
	rep, err := w.h.RT.Repair.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep.RunsWoken
}

func (w *world) run(t *testing.T, id string) contracts.WorkflowRun {
	t.Helper()
	run, err := w.store.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// once handles what the given queues hold, not the others.
func (w *world) once(t *testing.T, queues ...string) {
	t.Helper()
	for {
		n := 0
		for _, q := range queues {
			got, err := w.h.RT.Workers.Once(context.Background(), q, 10)
			if err != nil {
				t.Fatal(err)
			}
			n += got
		}
		if n == 0 {
			return
		}
	}
}

// The run's creator died between CreateRun and the first wake-up: nothing
// evaluates it until the repair sweep finds it stuck.
func TestRepairWakesARunNeverWoken(t *testing.T) {
	w := newWorld(t)
	run := w.created(t, 0)
	w.h.Drain()
	if got := w.run(t, run.ID); got.Status != contracts.RunRunning || got.Evaluations != 0 || w.eval.Evals.Load() != 0 {
		t.Fatalf("run %s after %d evaluations, want RUNNING and never evaluated", got.Status, w.eval.Evals.Load())
	}
	if n := w.repair(t); n != 0 {
		t.Fatalf("repair woke %d runs before runStuckAfter, want 0", n)
	}
	w.sweepEnds(t, run.ID)
}

// A node's turn ended and recorded its result, but the wake-up of its run
// was lost: the sweep wakes the run, which ends.
func TestRepairRecoversALostNodeWakeup(t *testing.T) {
	w := newWorld(t)
	run := w.h.StartRun(oneNode, nil)
	w.once(t, contracts.QueueWorkflow) // the first evaluation starts the node
	w.once(t, contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit)
	if n := w.h.Lose(contracts.QueueWorkflow); n != 1 {
		t.Fatalf("lost %d workflow wake-ups, want the node's one", n)
	}
	w.h.Drain()
	nodes, err := w.store.ListNodes(context.Background(), run.ID)
	if err != nil || len(nodes) != 1 || nodes[0].Result == nil {
		t.Fatalf("nodes %+v, %v; want one with its result", nodes, err)
	}
	if got := w.run(t, run.ID); got.Status != contracts.RunRunning {
		t.Fatalf("run %s before repair, want RUNNING (its wake-up was lost)", got.Status)
	}
	w.sweepEnds(t, run.ID)
}

// A run whose last evaluation saw every result it has is skipped by an
// ordinary wake-up, but not by the sweep's: its evaluation starts the
// nodes the script asks for.
func TestRepairEvaluatesARunWithNothingNew(t *testing.T) {
	w := newWorld(t)
	run := w.created(t, 1) // evaluated once, its node never started
	m := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: run.ID, SubmissionID: run.ID, Nonce: "dup"}
	if err := w.h.RT.Ports.Queue.Send(context.Background(), contracts.QueueWorkflow, m); err != nil {
		t.Fatal(err)
	}
	w.h.Drain()
	if got := w.run(t, run.ID); got.Status != contracts.RunRunning || w.eval.Evals.Load() != 0 {
		t.Fatalf("run %s after %d evaluations, want an ordinary wake-up skipped", got.Status, w.eval.Evals.Load())
	}
	w.sweepEnds(t, run.ID)
}

// A healthy run whose node is still working is not woken before
// runStuckAfter; once woken, its evaluation starts nothing twice, spends no
// evaluation of its budget and touches the run, so the next sweeps leave
// it alone for another runStuckAfter.
func TestRepairLeavesAHealthyRunAlone(t *testing.T) {
	w := newWorld(t)
	run := w.h.StartRun(oneNode, nil)
	w.once(t, contracts.QueueWorkflow) // the node's turn waits in the model queue
	for range 2 {
		if n := w.repair(t); n != 0 {
			t.Fatalf("repair woke %d runs updated %v ago, want 0", n, w.h.Clock.Now().Sub(w.run(t, run.ID).UpdatedAt))
		}
		w.h.Clock.Advance(runStuckAfter / 2)
	}
	if q := w.h.Queued(contracts.QueueWorkflow); len(q) != 0 {
		t.Fatalf("workflow queue holds %v, want nothing", q)
	}

	w.h.Clock.Advance(time.Second) // past runStuckAfter, the node still running
	before := w.run(t, run.ID)
	if n := w.repair(t); n != 1 {
		t.Fatalf("repair woke %d runs, want 1", n)
	}
	w.once(t, contracts.QueueWorkflow)
	after := w.run(t, run.ID)
	if after.Status != contracts.RunRunning || after.Evaluations != before.Evaluations || !after.UpdatedAt.Equal(w.h.Clock.Now()) {
		t.Fatalf("after the repair evaluation: %s, %d evaluations (before %d), updated %v (now %v); want RUNNING, the same count, touched",
			after.Status, after.Evaluations, before.Evaluations, after.UpdatedAt, w.h.Clock.Now())
	}
	if ev := w.eval.Evals.Load(); ev != 2 {
		t.Fatalf("%d evaluations, want the first and the repair's", ev)
	}
	if n := w.repair(t); n != 0 {
		t.Fatalf("repair woke a just-touched run again (%d)", n)
	}
	w.h.Drain()
	if got := w.run(t, run.ID); got.Status != contracts.RunSucceeded {
		t.Fatalf("run %s %s, want SUCCEEDED", got.Status, got.Error)
	}
	w.h.EveryNodeOnce(run.ID, 1)
}

// broken is an isolate that can never be started.
type broken struct{}

func (broken) Evaluate(context.Context, contracts.EvalRequest) (contracts.EvalResponse, error) {
	return contracts.EvalResponse{}, errors.New("isolate: exec: no such file")
}

// A run whose evaluations keep failing has its wake-up dead-lettered; the
// repair pass turns the dead letter into a visible FAILED poison state.
func TestDeadLetteredWakeupEndsTheRunPoisoned(t *testing.T) {
	h := enginetest.New(t, enginetest.Workflows(broken{}, nil))
	store := h.RT.Ports.Workflows
	ctx := context.Background()
	run, err := h.RT.Driver.Start(ctx, contracts.WorkflowRun{ID: "run_poison", WorkflowID: "wf", Script: `result = 1`})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 { // each delivery fails; past the receive limit it is dead-lettered
		h.Drain()
		h.Clock.Advance(10 * time.Minute)
	}
	rep, err := h.RT.Repair.Run(ctx)
	if err != nil || rep.RunsPoisoned != 1 {
		t.Fatalf("repair pass poisoned %d runs, %v; want the one run", rep.RunsPoisoned, err)
	}
	got, err := store.GetRun(ctx, run.ID)
	if err != nil || got.Status != contracts.RunFailed || !strings.HasPrefix(got.Error, "poison:") {
		t.Fatalf("run %s %q, %v", got.Status, got.Error, err)
	}
	if rep, _ := h.RT.Repair.Run(ctx); rep.RunsPoisoned != 0 {
		t.Fatalf("the dead letter was not deleted: %d more", rep.RunsPoisoned)
	}
}

// sweepEnds lets runStuckAfter pass, checks that one sweep wakes the run and
// that the run then ends SUCCEEDED with its one node run once.
func (w *world) sweepEnds(t *testing.T, runID string) {
	t.Helper()
	w.h.Clock.Advance(runStuckAfter + time.Second)
	if n := w.repair(t); n != 1 {
		t.Fatalf("repair woke %d runs, want 1", n)
	}
	w.h.Drain()
	if got := w.run(t, runID); got.Status != contracts.RunSucceeded {
		t.Fatalf("run %s %s, want SUCCEEDED", got.Status, got.Error)
	}
	w.h.EveryNodeOnce(runID, 1)
}
