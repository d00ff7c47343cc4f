package isolate

import (
	"context"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

const benchScript = "hs = [start('part %d' % i) for i in range(10)]\nresult = [r.output for r in wait(hs)]\n"

// BenchmarkIsolateRoundTrip: one evaluation through a real isolate
// subprocess (start, limits, request, evaluation, response, exit).
func BenchmarkIsolateRoundTrip(b *testing.B) {
	r := &Runner{Command: testIsolate()}
	req := contracts.EvalRequest{Script: benchScript, RunID: "run_bench"}
	for b.Loop() {
		resp, err := r.Evaluate(context.Background(), req)
		if err != nil || resp.Status != contracts.EvalPending {
			b.Fatalf("%+v %v", resp, err)
		}
	}
}

// BenchmarkEvaluateInProcess: the same evaluation without the process.
func BenchmarkEvaluateInProcess(b *testing.B) {
	req := contracts.EvalRequest{Script: benchScript, RunID: "run_bench"}
	for b.Loop() {
		if resp := script.Evaluate(context.Background(), req); resp.Status != contracts.EvalPending {
			b.Fatalf("%+v", resp)
		}
	}
}
