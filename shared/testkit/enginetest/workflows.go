package enginetest

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

// InProcess evaluates workflow scripts in the test process and counts the
// evaluations. The driver's logic is what such tests exercise; the isolate
// boundary has its own tests (shared/workflow/isolate), and the end-to-end
// ones run the real `cairn isolate`.
type InProcess struct{ Evals atomic.Int64 }

// Evaluate implements contracts.Evaluator.
func (e *InProcess) Evaluate(ctx context.Context, req contracts.EvalRequest) (contracts.EvalResponse, error) {
	e.Evals.Add(1)
	return script.Evaluate(ctx, req), nil
}

// Workflows is an option of New: workflows served from the harness's
// SQLite store (wrapped by wrap, when not nil) and evaluated by eval.
func Workflows(eval contracts.Evaluator, wrap func(contracts.WorkflowStore) contracts.WorkflowStore) func(*assemble.Ports) {
	return func(p *assemble.Ports) {
		var store contracts.WorkflowStore = p.Journal.(*sqlite.Store).Workflows()
		if wrap != nil {
			store = wrap(store)
		}
		p.Workflows, p.Evaluator = store, eval
	}
}

// StartRun stores a workflow named after the test with script src and
// starts its run (ids "wf_<test>" and "run_<test>").
func (h *Harness) StartRun(src string, input any) contracts.WorkflowRun {
	h.t.Helper()
	in, _ := json.Marshal(input)
	ctx := context.Background()
	wf, err := h.RT.Ports.Workflows.CreateWorkflow(ctx, contracts.Workflow{ID: "wf_" + h.t.Name(), Name: "t", Script: src, CreatedAt: Start})
	if err != nil {
		h.t.Fatal(err)
	}
	run, err := h.RT.Driver.Start(ctx, contracts.WorkflowRun{ID: "run_" + h.t.Name(), WorkflowID: wf.ID, Script: src, Input: in})
	if err != nil {
		h.t.Fatal(err)
	}
	return run
}

// EveryNodeOnce checks that each of the run's n nodes ran exactly one
// committed turn, has its result, and that the scripted model was called
// once per node (one-step nodes).
func (h *Harness) EveryNodeOnce(runID string, n int) {
	h.t.Helper()
	ctx := context.Background()
	nodes, err := h.RT.Ports.Workflows.ListNodes(ctx, runID)
	if err != nil || len(nodes) != n {
		h.t.Fatalf("%d nodes, %v; want %d", len(nodes), err, n)
	}
	for _, nd := range nodes {
		subs, err := h.Store.ListSubmissions(ctx, nd.SessionID, "", 0)
		if err != nil || len(subs) != 1 || subs[0].Phase != contracts.PhaseCommitted {
			h.t.Fatalf("node %d: %d turns (%v), want exactly one committed", nd.Seq, len(subs), err)
		}
		if nd.Result == nil || !nd.Result.OK {
			h.t.Fatalf("node %d has no result", nd.Seq)
		}
	}
	if calls := h.Model.Calls(); calls != int64(n) {
		h.t.Fatalf("%d model calls for %d one-step nodes", calls, n)
	}
}
