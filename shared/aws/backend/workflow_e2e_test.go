package backend_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/testkit/awscost"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// buildIsolate builds the isolate command (shared/workflow/isolate's test main, the
// same code as `cairn isolate`) for this test.
func buildIsolate(t testing.TB) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "isolate")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/cairnrun/cairn/shared/workflow/isolate/internal/testisolate").CombinedOutput()
	if err != nil {
		t.Fatalf("building the isolate: %v\n%s", err, out)
	}
	return []string{bin}
}

// A workflow end to end on DynamoDB/S3/SQS: created and started through the
// api function, driven through the workflow queue like its Lambda, nodes as
// ordinary turns; then a schedule firing delivered twice is one run.
func TestWorkflowOnEndpoint(t *testing.T) {
	isolateCmd := buildIsolate(t)
	s := newStack(t, 30*time.Second, 5, nil)
	if s.cfg.QueueURLs[contracts.QueueWorkflow] == "" {
		t.Fatal("Provision made no workflow queue")
	}
	// Rebuild with workflows served (the evaluator is the isolate process).
	cfg := s.cfg
	cfg.Workflows.Isolate = isolateCmd
	s = rebuild(t, s, cfg)
	if s.rt.Driver == nil {
		t.Fatal("workflows not served with a workflow queue and an isolate")
	}
	script := "def main(input):\n    rs = wait([start(\"part \" + p, model=\"scripted:plain\", key=p) for p in input[\"parts\"]])\n    return {\"n\": len(rs), \"ok\": all([r.ok for r in rs])}\n"
	code, wf := s.call("POST", "/v1/workflows", map[string]string{"name": "fan", "script": script}, nil)
	if code != http.StatusCreated {
		t.Fatalf("create workflow: %d %v", code, wf)
	}
	wfID := wf["id"].(string)
	code, bad := s.call("POST", "/v1/workflows", map[string]string{"name": "bad", "script": "result = (\n"}, nil)
	if code != http.StatusBadRequest || !strings.Contains(bad["error"].(map[string]any)["message"].(string), ":1:") {
		t.Fatalf("a syntax error: %d %v", code, bad)
	}
	code, run := s.call("POST", "/v1/workflows/"+wfID+"/runs", map[string]any{"input": map[string]any{"parts": []string{"a", "b", "c"}}}, map[string]string{"Idempotency-Key": "r1"})
	if code != http.StatusCreated {
		t.Fatalf("start run: %d %v", code, run)
	}
	runID := run["id"].(string)
	if code, again := s.call("POST", "/v1/workflows/"+wfID+"/runs", map[string]any{}, map[string]string{"Idempotency-Key": "r1"}); code != http.StatusOK || again["id"] != runID {
		t.Fatalf("same key: %d %v", code, again)
	}
	got := s.untilRun(runID, 2*time.Minute)
	if got.Status != contracts.RunSucceeded || string(got.Result) != `{"n":3,"ok":true}` {
		t.Fatalf("run %s %s: %s", got.Status, got.Error, got.Result)
	}
	code, view := s.call("GET", "/v1/workflows/"+wfID+"/runs/"+runID, nil, nil)
	nodes, _ := view["nodes"].([]any)
	if code != http.StatusOK || len(nodes) != 3 {
		t.Fatalf("run view: %d %v", code, view)
	}
	for _, n := range nodes {
		sub, _ := n.(map[string]any)["submission"].(map[string]any)
		if sub == nil || sub["phase"] != string(contracts.PhaseCommitted) {
			t.Fatalf("node without its committed turn: %v", n)
		}
	}

	// A schedule firing, delivered twice as EventBridge may: one run.
	code, sch := s.call("POST", "/v1/workflows/"+wfID+"/schedules", map[string]any{"expression": "rate(1 hour)", "input": map[string]any{"parts": []string{"x"}}}, nil)
	if code != http.StatusCreated {
		t.Fatalf("create schedule: %d %v", code, sch)
	}
	if code, _ := s.call("POST", "/v1/workflows/"+wfID+"/schedules", map[string]any{"expression": "every hour"}, nil); code != http.StatusBadRequest {
		t.Fatalf("a bad expression: %d", code)
	}
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for range 2 {
		m := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: sch["id"].(string), SubmissionID: sch["id"].(string), ScheduleID: sch["id"].(string), ScheduledAt: at}
		if err := s.rt.Ports.Queue.Send(ctx, contracts.QueueWorkflow, m); err != nil {
			t.Fatal(err)
		}
	}
	fired := s.untilRun(ids.ScheduledRun(sch["id"].(string), at), 2*time.Minute)
	if fired.Status != contracts.RunSucceeded {
		t.Fatalf("scheduled run %s %s", fired.Status, fired.Error)
	}
	runs, err := s.rt.Ports.Workflows.ListRuns(ctx, wfID, 0)
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs (%v), want the started one and one scheduled", len(runs), err)
	}
}

// rebuild assembles a new runtime on the same resources with cfg.
func rebuild(t testing.TB, old *stack, cfg backend.Config) *stack {
	t.Helper()
	rt, err := backend.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, rt: rt, cfg: cfg, api: lambdafn.APIHandler(rt.API), fns: map[string]harness.Function{}, harness: old.harness}
	s.harness.Functions = nil
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit, contracts.QueueWorkflow} {
		fn := harness.Function{Queue: q, URL: cfg.QueueURLs[q], BatchSize: 10, Visibility: 30 * time.Second, Handler: lambdafn.SQSHandler(q, rt.Handle, nil, backend.CoalesceWakeUps), Timeout: 30 * time.Second}
		s.fns[q] = fn
		s.harness.Functions = append(s.harness.Functions, fn)
	}
	return s
}

// untilRun drives every queue until the run ends.
func (s *stack) untilRun(runID string, deadline time.Duration) contracts.WorkflowRun {
	s.t.Helper()
	ctx := context.Background()
	for end := time.Now().Add(deadline); time.Now().Before(end); {
		if run, err := s.rt.Ports.Workflows.GetRun(ctx, runID); err == nil && run.Status.Terminal() {
			return run
		}
		for _, fn := range s.harness.Functions {
			if _, err := s.harness.Once(ctx, fn); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	s.t.Fatalf("run %s did not end within %s", runID, deadline)
	return contracts.WorkflowRun{}
}

// BenchmarkFanOutOnEndpoint is the fan-out of shared/workflow's
// BenchmarkFanOut1000 on the AWS shape: DynamoDB, S3 and SQS on the
// endpoint (moto here), every queue driven as its Lambda's event source
// mapping would (the harness, every function bounded by a 30 s timeout),
// evaluations in a real isolate process (make bench: -benchtime 1x). It
// reports the wall time, the run's evaluations and the AWS calls made.
// nodes=100 is the quick shape; nodes=1000 is issue 16's figure.
func BenchmarkFanOutOnEndpoint(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint("nodes=", n), func(b *testing.B) { fanOutOnEndpoint(b, n) })
	}
}

func fanOutOnEndpoint(b *testing.B, nodes int) {
	isolateCmd := buildIsolate(b)
	s := newStack(b, 30*time.Second, 5, nil)
	cfg := s.cfg
	cfg.Workflows.Isolate = isolateCmd
	calls := &awscost.CallCounter{} // a pointer: go1.26.8 fails to compile a CallCounter value used inside b.Loop
	counted := awstest.Config(b)
	calls.Instrument(&counted)
	cfg.AWS = &counted
	s = rebuild(b, s, cfg)
	script := "def main(input):\n    rs = wait([start(\"part \" + p, model=\"scripted:plain\", key=p) for p in input[\"parts\"]])\n    return {\"n\": len(rs), \"ok\": all([r.ok for r in rs])}\n"
	code, wf := s.call("POST", "/v1/workflows", map[string]string{"name": "fan", "script": script}, nil)
	if code != http.StatusCreated {
		b.Fatalf("create workflow: %d %v", code, wf)
	}
	parts := make([]string, nodes)
	for i := range parts {
		parts[i] = fmt.Sprint("p", i)
	}
	want := fmt.Sprintf(`{"n":%d,"ok":true}`, nodes)
	calls.Reset()
	for i := 0; b.Loop(); i++ {
		code, run := s.call("POST", "/v1/workflows/"+wf["id"].(string)+"/runs", map[string]any{"input": map[string]any{"parts": parts}},
			map[string]string{"Idempotency-Key": fmt.Sprint("bench-", i)})
		if code != http.StatusCreated {
			b.Fatalf("start run: %d %v", code, run)
		}
		got := s.untilRun(run["id"].(string), 30*time.Minute)
		if got.Status != contracts.RunSucceeded || string(got.Result) != want {
			b.Fatalf("run %s %s: %s", got.Status, got.Error, got.Result)
		}
		b.ReportMetric(float64(got.Evaluations), "evaluations")
	}
	n := calls.Snapshot()
	var ddb, sqsCalls int64
	for op, c := range n {
		switch {
		case strings.HasPrefix(op, "DynamoDB."):
			ddb += c
		case strings.HasPrefix(op, "SQS."):
			sqsCalls += c
		}
	}
	b.ReportMetric(float64(ddb)/float64(b.N), "ddb-calls")
	b.ReportMetric(float64(n["DynamoDB.Query"])/float64(b.N), "ddb-queries")
	b.ReportMetric(float64(sqsCalls)/float64(b.N), "sqs-calls")
	b.Logf("AWS calls: %v", n)
}
