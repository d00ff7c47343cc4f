package workflow_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/workflow"
)

// An evaluation near its deadline starts no further node: it records how
// far it got (StartedBelow), marks the run Starting and wakes it, and the
// next wake-up goes on from there — every node still runs exactly once.
func TestStartsStopNearTheDeadlineAndGoOn(t *testing.T) {
	w := newWorld(t, 0)
	run := w.start(t, fanOut, map[string]int{"n": 10})
	d := w.h.RT.Driver
	d.Starts, d.StartReserve = 3, 2*time.Hour // every deadline is near: each evaluation starts one round
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	w.h.Lose(contracts.QueueWorkflow) // the start's wake-up: these rounds are handled here
	wake := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: run.ID, SubmissionID: run.ID, Nonce: "t"}
	for round, want := range []int{3, 6} {
		if err := d.Handle(ctx, wake); err != nil {
			t.Fatal(err)
		}
		got, err := w.store.GetRun(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := w.store.ListNodes(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.StartedBelow != want || !got.Starting || len(nodes) != want {
			t.Fatalf("round %d: started below %d, starting %v, %d nodes; want %d, true, %d", round, got.StartedBelow, got.Starting, len(nodes), want, want)
		}
		if round == 0 { // no node's turn ran yet: the one wake-up queued is the continuation
			if n := w.h.Lose(contracts.QueueWorkflow); n != 1 {
				t.Fatalf("%d wake-ups queued after a cut-short evaluation, want its continuation", n)
			}
		}
	}
	d.StartReserve = 0
	done := w.settle(t, run.ID)
	if done.Status != contracts.RunSucceeded || !strings.Contains(string(done.Result), `"ok":10`) {
		t.Fatalf("run %s %s: %s", done.Status, done.Error, done.Result)
	}
	w.everyNodeOnce(t, run.ID, 10)
}

// listCounter counts the journal's listings of every submission of a
// session (phase ""): the read of a node's child turn.
type listCounter struct {
	contracts.JournalStore
	all atomic.Int64
}

func (l *listCounter) ListSubmissions(ctx context.Context, sessionID string, phase contracts.Phase, limit int) ([]contracts.Submission, error) {
	if phase == "" {
		l.all.Add(1)
	}
	return l.JournalStore.ListSubmissions(ctx, sessionID, phase, limit)
}

// An evaluation reads its results from the node records alone: reading
// every unresolved node's turn on each of a fan-out's wake-ups made it
// quadratic (on DynamoDB, a Query per node per wake-up). Only a repair
// evaluation reconciles nodes with their turns.
func TestEvaluationsReadNoChildTurn(t *testing.T) {
	counter := &listCounter{}
	h := enginetest.NewConfig(t, assemble.Config{WorkflowStarts: 4}, enginetest.Workflows(&enginetest.InProcess{}, nil), func(p *assemble.Ports) {
		counter.JournalStore = p.Journal
		p.Journal = counter
	})
	run := h.StartRun(fanOut, map[string]int{"n": 40})
	h.Drain()
	got, err := h.RT.Ports.Workflows.GetRun(context.Background(), run.ID)
	if err != nil || got.Status != contracts.RunSucceeded {
		t.Fatalf("run %+v, %v", got, err)
	}
	h.EveryNodeOnce(run.ID, 40)
	if n := counter.all.Load(); n != 0 {
		t.Fatalf("%d reads of a node's turns in a 40-node fan-out, want 0", n)
	}
	if got.StartedBelow != 40 || got.Starting {
		t.Fatalf("started below %d, starting %v; want 40, false", got.StartedBelow, got.Starting)
	}
}

// A run's wake-ups coalesce with each other, repair's apart (they evaluate
// even when nothing is new); a schedule's firing never coalesces.
func TestWakeKey(t *testing.T) {
	wake := func(nonce, schedule string) contracts.Message {
		return contracts.Message{Kind: contracts.QueueWorkflow, SessionID: "run-1", SubmissionID: "run-1", Nonce: nonce, ScheduleID: schedule}
	}
	node, starts, repair := workflow.WakeKey(wake("node:n1", "")), workflow.WakeKey(wake("starts:3", "")), workflow.WakeKey(wake(workflow.RepairNonce+"x", ""))
	if node == "" || node != starts || repair == "" || repair == node {
		t.Fatalf("keys node %q, starts %q, repair %q: want node = starts, repair apart, none empty", node, starts, repair)
	}
	if k := workflow.WakeKey(wake("", "sch-1")); k != "" {
		t.Fatalf("a firing's key %q, want none", k)
	}
	other := wake("node:n1", "")
	other.SubmissionID = "run-2"
	if workflow.WakeKey(other) == node {
		t.Fatal("two runs share a key")
	}
}
