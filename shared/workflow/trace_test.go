package workflow_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/repair"
	"github.com/cairnrun/cairn/shared/testkit/spantest"
)

// runTrace is what a run's spans say about it.
type runTrace struct {
	start    tracetest.SpanStub
	evals    []tracetest.SpanStub            // the run's evaluation spans
	accepts  map[string]tracetest.SpanStub   // node id → its turn's accept span
	turns    map[string][]tracetest.SpanStub // node id → every span of its turn's trace
	byID     map[trace.SpanID]tracetest.SpanStub
	runTrace trace.TraceID
}

// traceOfRun sorts the exported spans of run runID: its start span, its
// evaluations, and each node turn's trace (found by its model phase).
func traceOfRun(t *testing.T, exp *tracetest.InMemoryExporter, w *world, runID string) runTrace {
	t.Helper()
	all := exp.GetSpans()
	rt := runTrace{accepts: map[string]tracetest.SpanStub{}, turns: map[string][]tracetest.SpanStub{}, byID: map[trace.SpanID]tracetest.SpanStub{}}
	for _, s := range all {
		rt.byID[s.SpanContext.SpanID()] = s
		if v, _ := spantest.Attr(s, "cairn.run_id"); v.AsString() == runID && strings.HasPrefix(s.Name, "cairn.workflow.start ") {
			if rt.start.SpanContext.IsValid() {
				t.Fatalf("two start spans for run %s", runID)
			}
			rt.start = s
		}
	}
	if !rt.start.SpanContext.IsValid() {
		t.Fatalf("no start span for run %s", runID)
	}
	rt.runTrace = rt.start.SpanContext.TraceID()
	for _, s := range all {
		if s.Name == "cairn.workflow.evaluate" && s.SpanContext.TraceID() == rt.runTrace {
			rt.evals = append(rt.evals, s)
		}
	}
	nodes, err := w.store.ListNodes(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		subs, err := w.h.Store.ListSubmissions(context.Background(), n.SessionID, "", 0)
		if err != nil || len(subs) != 1 {
			t.Fatalf("node %s: %d turns (%v)", n.ID, len(subs), err)
		}
		var tid trace.TraceID
		for _, s := range all {
			if v, _ := spantest.Attr(s, "cairn.submission_id"); v.AsString() == subs[0].ID && s.Name == "cairn.phase model" {
				tid = s.SpanContext.TraceID()
			}
		}
		for _, s := range all {
			if tid.IsValid() && s.SpanContext.TraceID() == tid {
				rt.turns[n.ID] = append(rt.turns[n.ID], s)
				if s.Name == "cairn.accept" {
					rt.accepts[n.ID] = s
				}
			}
		}
		if _, ok := rt.accepts[n.ID]; !ok {
			t.Fatalf("node %s: no accept span in its turn's trace", n.ID)
		}
	}
	return rt
}

// TestARunIsATraceItsNodesLinkedTraces: a run of three nodes is one trace —
// its start span the root, every evaluation a span in it under a span of
// the run — and the run records it; each node's turn is a trace of its
// own, whose accept span is a root linked to the evaluation that started
// it; a node's end wakes an evaluation linked back to the node's turn.
func TestARunIsATraceItsNodesLinkedTraces(t *testing.T) {
	exp := spantest.Record(t)
	w := newWorld(t, 0)
	ctx := context.Background()
	if _, err := w.h.RT.Ports.Workflows.CreateWorkflow(ctx, contracts.Workflow{ID: "wf_fan", Name: "fan", Script: fanOut}); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]int{"n": 3})
	if _, err := w.h.RT.Driver.Start(ctx, contracts.WorkflowRun{ID: "run_fan", WorkflowID: "wf_fan", WorkflowName: "fan", Owner: "alice", Script: fanOut, Input: in}); err != nil {
		t.Fatal(err)
	}
	run := w.settle(t, "run_fan")
	if run.Status != contracts.RunSucceeded {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	rt := traceOfRun(t, exp, w, "run_fan")
	if rt.start.Name != "cairn.workflow.start fan" || rt.start.Parent.IsValid() {
		t.Errorf("start span %q with parent %v, want cairn.workflow.start fan as the root", rt.start.Name, rt.start.Parent)
	}
	for key, want := range map[string]string{"cairn.workflow.name": "fan", "cairn.principal": "alice", "cairn.run_id": "run_fan"} {
		if v, _ := spantest.Attr(rt.start, key); v.AsString() != want {
			t.Errorf("start span %s = %q, want %q", key, v.AsString(), want)
		}
	}
	if want := "00-" + rt.runTrace.String() + "-" + rt.start.SpanContext.SpanID().String() + "-01"; run.Trace != want {
		t.Errorf("run.Trace = %q, want the start span %q", run.Trace, want)
	}
	if len(rt.evals) < 2 {
		t.Fatalf("%d evaluation spans in the run's trace, want the first and at least one after the nodes ended", len(rt.evals))
	}
	nodeTraces := map[trace.TraceID]string{}
	for id, spans := range rt.turns {
		nodeTraces[spans[0].SpanContext.TraceID()] = id
	}
	linkedBack := 0
	for _, e := range rt.evals {
		p, ok := rt.byID[e.Parent.SpanID()]
		if !ok || p.SpanContext.TraceID() != rt.runTrace || (p.Name != rt.start.Name && p.Name != "cairn.workflow.evaluate") {
			t.Errorf("evaluation under %q, want the start span or an evaluation", p.Name)
		}
		if _, ok := spantest.Attr(e, "cairn.workflow.nodes.done"); !ok && !wasEnded(e) {
			t.Errorf("evaluation span without node counts: %v", e.Attributes)
		}
		for _, l := range e.Links {
			if _, ok := nodeTraces[l.SpanContext.TraceID()]; ok {
				linkedBack++
			}
		}
	}
	if linkedBack == 0 {
		t.Error("no evaluation is linked to the node turn whose end woke it")
	}
	if len(nodeTraces) != 3 {
		t.Fatalf("%d node turn traces, want 3 distinct", len(nodeTraces))
	}
	for id, acc := range rt.accepts {
		if acc.SpanContext.TraceID() == rt.runTrace || acc.Parent.IsValid() {
			t.Errorf("node %s: its accept span is in the run's trace or has a parent", id)
		}
		if len(acc.Links) != 1 {
			t.Fatalf("node %s: accept span has %d links, want 1", id, len(acc.Links))
		}
		if l, ok := rt.byID[acc.Links[0].SpanContext.SpanID()]; !ok || l.Name != "cairn.workflow.evaluate" || l.SpanContext.TraceID() != rt.runTrace {
			t.Errorf("node %s: accept span linked to %q, want an evaluation of the run", id, l.Name)
		}
		phases := 0
		for _, s := range rt.turns[id] {
			if strings.HasPrefix(s.Name, "cairn.phase ") {
				phases++
			}
		}
		if phases < 1 { // its model phase, which commits the answer in its own write (the embedded store batches)
			t.Errorf("node %s: %d phase spans in its trace", id, phases)
		}
	}
}

// TestARepairWakeJoinsTheRunsTrace: a run whose first wake-up was lost is
// woken by repair; that evaluation is in the run's trace under its start
// span, marked as repair's, and the nodes it starts link to it.
func TestARepairWakeJoinsTheRunsTrace(t *testing.T) {
	exp := spantest.Record(t)
	w := newWorld(t, 0)
	run := w.start(t, fanOut, map[string]int{"n": 2})
	if n := w.h.Lose(contracts.QueueWorkflow); n != 1 {
		t.Fatalf("lost %d wake-ups, want the start's", n)
	}
	w.h.Clock.Advance(repair.DefaultRunStuckAfter + time.Minute)
	if rep := w.h.Repair(); rep.RunsWoken != 1 {
		t.Fatalf("repair woke %d runs, want 1: %+v", rep.RunsWoken, rep)
	}
	if got := w.settle(t, run.ID); got.Status != contracts.RunSucceeded {
		t.Fatalf("run %s: %s", got.Status, got.Error)
	}
	rt := traceOfRun(t, exp, w, run.ID)
	var first tracetest.SpanStub
	for _, e := range rt.evals {
		if v, _ := spantest.Attr(e, "cairn.workflow.repair"); v.AsBool() && !first.SpanContext.IsValid() {
			first = e
		}
	}
	if !first.SpanContext.IsValid() {
		t.Fatalf("no repair evaluation in the run's trace among %d evaluations", len(rt.evals))
	}
	if first.Parent.SpanID() != rt.start.SpanContext.SpanID() {
		t.Errorf("the repair evaluation is not under the run's start span")
	}
	for id, acc := range rt.accepts {
		if len(acc.Links) != 1 || acc.Links[0].SpanContext.SpanID() != first.SpanContext.SpanID() {
			t.Errorf("node %s: accept span links %v, want the repair evaluation", id, acc.Links)
		}
	}
}

// wasEnded: the evaluation span is of a wake-up that came after the run
// ended (it only makes sure the waiting call heard).
func wasEnded(e tracetest.SpanStub) bool {
	v, _ := spantest.Attr(e, "cairn.workflow.status")
	return contracts.RunStatus(v.AsString()).Terminal()
}
