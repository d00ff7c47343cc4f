package script_test

import (
	"context"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

// BenchmarkEvaluateInProcess: one evaluation of a small fan-out script with
// every result known (the last evaluation of a run).
func BenchmarkEvaluateInProcess(b *testing.B) {
	req := replayRequest(nil)
	for {
		r := script.Evaluate(context.Background(), req)
		if r.Status != contracts.EvalPending {
			break
		}
		if req.Results == nil {
			req.Results = results{}
		}
		for _, p := range r.Pending {
			req.Results[p.ID] = outcome(p.Spec.Prompt)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := script.Evaluate(context.Background(), req); r.Status != contracts.EvalDone {
			b.Fatalf("%s %s", r.Status, r.Error)
		}
	}
}

// BenchmarkFanOut1000: the first evaluation of a 1,000-node fan-out.
func BenchmarkFanOut1000(b *testing.B) {
	req := contracts.EvalRequest{RunID: runID, Script: "result = [r.output for r in map(lambda i: start('item %d' % i), range(1000))]\n"}
	for b.Loop() {
		if r := script.Evaluate(context.Background(), req); len(r.Pending) != 1000 {
			b.Fatalf("%s %s", r.Status, r.Error)
		}
	}
}
