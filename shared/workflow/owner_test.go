package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// nodeOwners returns the Owner of each of the run's nodes' sessions.
func (w *world) nodeOwners(t *testing.T, runID string) []string {
	t.Helper()
	ctx := context.Background()
	nodes, err := w.store.ListNodes(ctx, runID)
	if err != nil || len(nodes) == 0 {
		t.Fatalf("nodes of %s: %d, %v", runID, len(nodes), err)
	}
	var out []string
	for _, n := range nodes {
		sess, err := w.h.Store.GetSession(ctx, n.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sess.Owner)
	}
	return out
}

// A run's nodes' sessions are the run's owner's.
func TestNodeSessionsBelongToTheRunsOwner(t *testing.T) {
	w := newWorld(t, 0)
	ctx := context.Background()
	src := `result = agent("hi", model="scripted:plain").output`
	if _, err := w.store.CreateWorkflow(ctx, contracts.Workflow{ID: "wf_o", Owner: "alice", Name: "o", Script: src}); err != nil {
		t.Fatal(err)
	}
	run, err := w.h.RT.Driver.Start(ctx, contracts.WorkflowRun{ID: "run_o", WorkflowID: "wf_o", Owner: "alice", Script: src})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.settle(t, run.ID); got.Status != contracts.RunSucceeded || got.Owner != "alice" {
		t.Fatalf("run %s owned by %q", got.Status, got.Owner)
	}
	for _, o := range w.nodeOwners(t, run.ID) {
		if o != "alice" {
			t.Fatalf("a node session is %q's, want alice's", o)
		}
	}
}

// A run started by the run_workflow tool is the calling session's
// owner's, and so are its nodes' sessions.
func TestRunWorkflowRunsBelongToTheSessionsOwner(t *testing.T) {
	w := newWorld(t, 0)
	ctx := context.Background()
	s, err := w.h.RT.Engine.CreateSession(ctx, "bob", contracts.SessionSpec{Model: "scripted:workflow", Tools: []contracts.ToolConfig{{Name: "run_workflow"}}})
	if err != nil {
		t.Fatal(err)
	}
	sub := w.h.Submit(s.ID, "do it in parallel")
	for range 20 {
		w.h.Drain()
		if w.h.Get(sub.ID).Phase.Terminal() {
			break
		}
		w.h.Clock.Advance(10 * time.Minute)
	}
	got := w.h.Get(sub.ID)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("parent %s %s", got.Phase, got.Error)
	}
	var runID string
	for step := range got.Step + 1 {
		recs, err := w.h.Store.ToolRecords(ctx, sub.ID, step)
		if err != nil {
			t.Fatal(err)
		}
		for call := range recs {
			if r, err := w.store.GetRun(ctx, ids.ToolRun(sub.ID, step, call)); err == nil {
				runID = r.ID
				if r.Owner != "bob" {
					t.Fatalf("the tool's run is %q's, want bob's", r.Owner)
				}
			}
		}
	}
	if runID == "" {
		t.Fatal("no run of the run_workflow call found")
	}
	for _, o := range w.nodeOwners(t, runID) {
		if o != "bob" {
			t.Fatalf("a node session of the tool's run is %q's, want bob's", o)
		}
	}
}

// A schedule's firing is a run of the schedule's owner.
func TestScheduledRunsBelongToTheSchedulesOwner(t *testing.T) {
	w := newWorld(t, 0)
	ctx := context.Background()
	src := `result = agent("tick", model="scripted:plain").output`
	if _, err := w.store.CreateWorkflow(ctx, contracts.Workflow{ID: "wf_c", Owner: "carol", Name: "c", Script: src}); err != nil {
		t.Fatal(err)
	}
	s, err := w.store.CreateSchedule(ctx, contracts.Schedule{ID: "sch_c", WorkflowID: "wf_c", Owner: "carol", Expression: "rate(5 minutes)"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC)
	if err := w.h.RT.Driver.Fire(ctx, s, at); err != nil {
		t.Fatal(err)
	}
	run := w.settle(t, ids.ScheduledRun(s.ID, at))
	if run.Owner != "carol" {
		t.Fatalf("the scheduled run is %q's, want carol's", run.Owner)
	}
	for _, o := range w.nodeOwners(t, run.ID) {
		if o != "carol" {
			t.Fatalf("a node session of the scheduled run is %q's, want carol's", o)
		}
	}
}
