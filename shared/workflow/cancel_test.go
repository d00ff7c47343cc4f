package workflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// Cancelling a 50-node run leaves no node running: every node's turn ends
// CANCELLED without a model call, the run ends CANCELLED, and nothing
// starts afterwards.
func TestCancelRunOfFiftyNodes(t *testing.T) {
	w := newWorld(t, 0)
	w.h.RT.Workers.Chain = nil // steps the run through the queues
	h := w.h
	src := "def main(input):\n    return [r.output for r in wait([start(\"part %d\" % i, model=\"scripted:plain\") for i in range(50)])]\n"
	run := h.StartRun(src, nil)
	// One evaluation starts the 50 nodes; their turns wait in the queue.
	if _, err := h.RT.Workers.Once(context.Background(), contracts.QueueWorkflow, 1); err != nil {
		t.Fatal(err)
	}
	nodes, err := w.store.ListNodes(context.Background(), run.ID)
	if err != nil || len(nodes) != 50 {
		t.Fatalf("%d nodes (%v), want 50", len(nodes), err)
	}
	ctx := contracts.WithPrincipal(context.Background(), contracts.Principal{Name: "carol"})
	got, err := h.RT.Driver.CancelRun(ctx, run.WorkflowID, run.ID, "changed my mind")
	if err != nil || got.Status != contracts.RunCancelled || got.Error != "cancelled by carol: changed my mind" {
		t.Fatalf("cancel: %s %q, %v", got.Status, got.Error, err)
	}
	h.Drain()
	if calls := h.Model.Calls(); calls != 0 {
		t.Fatalf("%d model calls after the cancel", calls)
	}
	nodes, _ = w.store.ListNodes(context.Background(), run.ID)
	for _, n := range nodes {
		subs, err := h.Store.ListSubmissions(context.Background(), n.SessionID, "", 0)
		if err != nil || len(subs) != 1 || subs[0].Phase != contracts.PhaseCancelled {
			t.Fatalf("node %d: %d turns %v (%v)", n.Seq, len(subs), subs, err)
		}
		if n.Result == nil || n.Result.OK || !strings.Contains(n.Result.Error, "cancelled") {
			t.Fatalf("node %d result %+v", n.Seq, n.Result)
		}
	}
	if again, err := h.RT.Driver.CancelRun(ctx, run.WorkflowID, run.ID, ""); err != nil || again.Status != contracts.RunCancelled {
		t.Fatalf("second cancel: %s %v", again.Status, err)
	}
	if _, err := h.RT.Driver.CancelRun(ctx, "wf_other", run.ID, ""); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("cancel through another workflow: %v", err)
	}
}

// A cancel whose asker died after recording it is finished by the next
// wake-up of the run (repair's sweep wakes a RUNNING run).
func TestCancelRunFinishedByAWakeUp(t *testing.T) {
	w := newWorld(t, 0)
	w.h.RT.Workers.Chain = nil // steps the run through the queues
	h := w.h
	run := h.StartRun("def main(input):\n    return wait([start(\"a\", model=\"scripted:plain\")])[0].output\n", nil)
	if _, err := h.RT.Workers.Once(context.Background(), contracts.QueueWorkflow, 1); err != nil {
		t.Fatal(err)
	}
	cur, _ := w.store.GetRun(context.Background(), run.ID)
	next := cur
	next.Cancel = &contracts.Cancel{By: "dave", At: cur.UpdatedAt}
	if _, err := w.store.UpdateRun(context.Background(), next, cur.Version); err != nil {
		t.Fatal(err)
	}
	if err := h.RT.Driver.Wake(context.Background(), run.ID, "repair:test"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.RT.Workers.Once(context.Background(), contracts.QueueWorkflow, 10); err != nil { // before the node's turn runs
		t.Fatal(err)
	}
	h.Drain()
	got, _ := w.store.GetRun(context.Background(), run.ID)
	if got.Status != contracts.RunCancelled || h.Model.Calls() != 0 {
		t.Fatalf("run %s, %d model calls", got.Status, h.Model.Calls())
	}
}

// Cancelling a turn that waits for its run_workflow call cancels that run
// too: no sub-agent goes on for nobody.
func TestCancelTurnCancelsItsChildRun(t *testing.T) {
	w := newWorld(t, 0)
	w.h.RT.Workers.Chain = nil // steps the run through the queues
	h := w.h
	s := h.Session(contracts.SessionSpec{Model: "scripted:workflow", Tools: []contracts.ToolConfig{{Name: "run_workflow"}}})
	sub := h.Submit(s.ID, "fan out")
	ctx := context.Background()
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueWorkflow} {
		if _, err := h.RT.Workers.Once(ctx, q, 1); err != nil { // the call starts the run; its first evaluation starts three nodes
			t.Fatal(err)
		}
	}
	parked := h.Get(sub.ID)
	if parked.Phase != contracts.PhaseTools {
		t.Fatalf("parent %s", parked.Phase)
	}
	if _, err := h.RT.Engine.Cancel(ctx, s.ID, sub.ID, "never mind"); err != nil {
		t.Fatal(err)
	}
	h.Drain()
	run, err := w.store.GetRun(ctx, ids.ToolRun(sub.ID, parked.Step, parked.ToolRequests[0].ID))
	if err != nil || run.Status != contracts.RunCancelled || !strings.Contains(run.Error, "was cancelled") {
		t.Fatalf("child run %s %q (%v)", run.Status, run.Error, err)
	}
	if calls := h.Model.Calls(); calls != 1 {
		t.Fatalf("%d model calls, want 1 (the parent's first step; no node ran)", calls)
	}
}
