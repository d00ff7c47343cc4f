package workflow_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// crashingStore panics (a process dying) at the crashAt-th PutNode, once.
type crashingStore struct {
	contracts.WorkflowStore
	puts    atomic.Int64 // starts may run at once (Driver.Starts)
	crashAt int64
}

func (s *crashingStore) PutNode(ctx context.Context, n contracts.WorkflowNode) (contracts.WorkflowNode, bool, error) {
	if s.puts.Add(1) == s.crashAt {
		panic("simulated crash in the middle of fan-out")
	}
	return s.WorkflowStore.PutNode(ctx, n)
}

type world struct {
	h     *enginetest.Harness
	store contracts.WorkflowStore
	eval  *enginetest.InProcess
}

func newWorld(t *testing.T, crashAt int) *world {
	t.Helper()
	w := &world{eval: &enginetest.InProcess{}}
	w.h = enginetest.New(t, enginetest.Workflows(w.eval, func(s contracts.WorkflowStore) contracts.WorkflowStore {
		w.store = &crashingStore{WorkflowStore: s, crashAt: int64(crashAt)}
		return w.store
	}))
	return w
}

// settle drives every queue until the run ends, moving the clock past the
// visibility timeout when a handler died.
func (w *world) settle(t *testing.T, runID string) contracts.WorkflowRun {
	t.Helper()
	for range 20 {
		w.h.Drain()
		run, err := w.store.GetRun(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status.Terminal() {
			return run
		}
		w.h.Clock.Advance(10 * time.Minute)
	}
	t.Fatal("run never ended")
	return contracts.WorkflowRun{}
}

const fanOut = `
def main(input):
    hs = [start("item " + str(i), model="scripted:plain") for i in range(input["n"])]
    rs = wait(hs)
    return {"ok": len([r for r in rs if r.ok]), "last": rs[-1].output}
`

func (w *world) start(t *testing.T, src string, input any) contracts.WorkflowRun {
	t.Helper()
	return w.h.StartRun(src, input)
}

// everyNodeOnce checks that each of the run's n nodes ran exactly one turn.
func (w *world) everyNodeOnce(t *testing.T, runID string, n int) {
	t.Helper()
	w.h.EveryNodeOnce(runID, n)
}

func TestFanOutOf50Nodes(t *testing.T) {
	w := newWorld(t, 0)
	run := w.settle(t, w.start(t, fanOut, map[string]int{"n": 50}).ID)
	if run.Status != contracts.RunSucceeded || !strings.Contains(string(run.Result), `"ok":50`) {
		t.Fatalf("run %s %s: %s", run.Status, run.Error, run.Result)
	}
	w.everyNodeOnce(t, run.ID, 50)
	// 50 independent nodes fan out in one evaluation; the others are the
	// wake-ups that brought new results (at most one per node, fewer when
	// results arrive together).
	if ev := w.eval.Evals.Load(); ev > 51 {
		t.Fatalf("%d evaluations for 50 nodes", ev)
	}
}

// The driver dies in the middle of fan-out (after 20 of 50 nodes were
// recorded), and every wake-up arrives twice: still each node runs once.
func TestCrashMidFanOutAndDuplicateWakeups(t *testing.T) {
	w := newWorld(t, 21)
	run := w.start(t, fanOut, map[string]int{"n": 50})
	ctx := context.Background()
	for i := range 3 { // duplicated wake-ups, each a distinct message
		m := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: run.ID, SubmissionID: run.ID, Nonce: fmt.Sprint("dup-", i)}
		if err := w.h.RT.Ports.Queue.Send(ctx, contracts.QueueWorkflow, m); err != nil {
			t.Fatal(err)
		}
	}
	done := w.settle(t, run.ID)
	if done.Status != contracts.RunSucceeded {
		t.Fatalf("run %s %s", done.Status, done.Error)
	}
	if puts := w.store.(*crashingStore).puts.Load(); puts <= 21 {
		t.Fatalf("the driver never crashed (%d node writes)", puts)
	}
	w.everyNodeOnce(t, run.ID, 50)
}

func TestDuplicateScheduleFiringIsOneRun(t *testing.T) {
	w := newWorld(t, 0)
	ctx := context.Background()
	src := `result = agent("tick", model="scripted:plain").output`
	if _, err := w.store.CreateWorkflow(ctx, contracts.Workflow{ID: "wf_s", Name: "s", Script: src}); err != nil {
		t.Fatal(err)
	}
	s, err := w.store.CreateSchedule(ctx, contracts.Schedule{ID: "sch_1", WorkflowID: "wf_s", Expression: "rate(5 minutes)"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC)
	for range 3 {
		if err := w.h.RT.Driver.Fire(ctx, s, at); err != nil {
			t.Fatal(err)
		}
	}
	// The same firing through the queue, as EventBridge delivers it.
	m := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: s.ID, SubmissionID: s.ID, ScheduleID: s.ID, ScheduledAt: at}
	if err := w.h.RT.Ports.Queue.Send(ctx, contracts.QueueWorkflow, m); err != nil {
		t.Fatal(err)
	}
	runID := ids.ScheduledRun(s.ID, at)
	if run := w.settle(t, runID); run.Status != contracts.RunSucceeded || !run.StartedAt.Equal(at) {
		t.Fatalf("run %+v", run)
	}
	runs, err := w.store.ListRuns(ctx, "wf_s", 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs, %v; want one", len(runs), err)
	}
	w.everyNodeOnce(t, runID, 1)
}

// A node that fails is a value the script inspects; a script error ends
// the run FAILED with line and column.
func TestFailuresAreValuesAndScriptErrorsFailTheRun(t *testing.T) {
	w := newWorld(t, 0)
	src := `
r = agent("loop forever", model="scripted:loop", max_steps=2)
result = {"ok": r.ok, "why": r.error}
`
	run := w.settle(t, w.start(t, src, nil).ID)
	if run.Status != contracts.RunSucceeded || !strings.Contains(string(run.Result), `"ok":false`) || !strings.Contains(string(run.Result), "limit_tripped:steps") {
		t.Fatalf("run %s %s: %s", run.Status, run.Error, run.Result)
	}
	w2 := newWorld(t, 0)
	bad := w2.settle(t, w2.start(t, "x = 1\nresult = x + \"a\"\n", nil).ID)
	if bad.Status != contracts.RunFailed || !strings.Contains(bad.Error, "script_failed") || !strings.Contains(bad.Error, ":2:") {
		t.Fatalf("run %s: %q", bad.Status, bad.Error)
	}
}

// The run_workflow tool: the turn parks while its run fans out, the run's
// end wakes it, and the model gets the run's result.
func TestRunWorkflowToolParksTheTurn(t *testing.T) {
	w := newWorld(t, 0)
	s := w.h.Session(contracts.SessionSpec{Model: "scripted:workflow", Tools: []contracts.ToolConfig{{Name: "run_workflow"}}})
	sub := w.h.Submit(s.ID, "do it in parallel")
	for range 20 {
		w.h.Drain()
		if w.h.Get(sub.ID).Phase.Terminal() {
			break
		}
		w.h.Clock.Advance(10 * time.Minute)
	}
	if got := w.h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("parent %s %s", got.Phase, got.Error)
	}
	tr := w.h.Transcript(s.ID)
	want := `tool: result=["Hello from cairn's scripted model. You said: part a","Hello from cairn's scripted model. You said: part b","Hello from cairn's scripted model. You said: part c"]`
	if tr[2] != want {
		t.Fatalf("tool result:\n%s\nwant\n%s", tr[2], want)
	}
	// One run, its three nodes once each, plus the parent's two steps.
	if calls := w.h.Model.Calls(); calls != 5 {
		t.Fatalf("%d model calls, want 5", calls)
	}
}
