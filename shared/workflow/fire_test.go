package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// A firing of a paused or deleted schedule starts no run, whether it comes
// from the local ticker (Driver.Fire, with the schedule as listed before
// the pause) or from EventBridge (a message on the workflow queue); once
// resumed, a firing starts its run, owned by the schedule's owner.
func TestFiringOfPausedOrDeletedScheduleStartsNoRun(t *testing.T) {
	w := newWorld(t, 0)
	ctx := context.Background()
	src := `result = agent("tick", model="scripted:plain").output`
	if _, err := w.store.CreateWorkflow(ctx, contracts.Workflow{ID: "wf_p", Owner: "alice", Name: "p", Script: src}); err != nil {
		t.Fatal(err)
	}
	listed, err := w.store.CreateSchedule(ctx, contracts.Schedule{ID: "sch_p", WorkflowID: "wf_p", Owner: "alice", Expression: "rate(5 minutes)"})
	if err != nil {
		t.Fatal(err)
	}
	paused := listed
	paused.Paused, paused.UpdatedAt = true, w.h.Clock.Now()
	if _, err := w.store.UpdateSchedule(ctx, paused); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC)
	fireBoth := func(at time.Time) {
		t.Helper()
		if err := w.h.RT.Driver.Fire(ctx, listed, at); err != nil { // listed: as the ticker saw it, unpaused
			t.Fatal(err)
		}
		m := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: listed.ID, SubmissionID: listed.ID, ScheduleID: listed.ID, ScheduledAt: at.Add(time.Minute)}
		if err := w.h.RT.Ports.Queue.Send(ctx, contracts.QueueWorkflow, m); err != nil {
			t.Fatal(err)
		}
		w.h.Drain()
	}
	noRuns := func(what string) {
		t.Helper()
		runs, err := w.store.ListRuns(ctx, "wf_p", 0)
		if err != nil || len(runs) != 0 {
			t.Fatalf("%s: %d runs (%v), want none", what, len(runs), err)
		}
	}
	fireBoth(at)
	noRuns("paused")

	if _, err := w.store.UpdateSchedule(ctx, listed); err != nil { // resumed
		t.Fatal(err)
	}
	later := at.Add(5 * time.Minute)
	if err := w.h.RT.Driver.Fire(ctx, listed, later); err != nil {
		t.Fatal(err)
	}
	run := w.settle(t, ids.ScheduledRun(listed.ID, later))
	if run.Status != contracts.RunSucceeded || run.Owner != "alice" || run.ScheduleID != listed.ID {
		t.Fatalf("resumed firing: run %s owner %q schedule %q, want SUCCEEDED, alice's, of %s", run.Status, run.Owner, run.ScheduleID, listed.ID)
	}

	if err := w.store.DeleteSchedule(ctx, listed.ID); err != nil {
		t.Fatal(err)
	}
	fireBoth(later.Add(5 * time.Minute))
	runs, err := w.store.ListRuns(ctx, "wf_p", 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("after the delete: %d runs (%v), want only the resumed one", len(runs), err)
	}
}
