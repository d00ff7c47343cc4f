package backend_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/all"
	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/faultproxy"
)

// Lost answers end to end: the runtime's DynamoDB, S3 and SQS clients talk
// to the endpoint through a fault proxy that loses the first answer of
// every write (dropped, reset, replaced by a 500, in turn), so every write
// is applied once and then retried by the SDK. The harness (Lambda's event
// source mappings, AWS's side) talks to the endpoint directly. No repair
// pass runs: a write mistaken for a conflict (begin() returning without
// enqueueing) leaves the turn with no message anywhere and the test fails.

// lossyConfig is the test kit's SDK config pointed at the proxy with the
// SDK's standard retry mode (4 attempts, DynamoDB's 25 ms base backoff) and
// no client-side retry quota: production keeps the quota (500 tokens, 14
// per retry, not refunded when the retry fails its condition), which a
// fault in every write would drain.
func lossyConfig(t *testing.T, url string) aws.Config {
	cfg := awstest.Config(t)
	cfg.BaseEndpoint = aws.String(url)
	cfg.RetryMaxAttempts = 0
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts, o.BaseDelay, o.RateLimiter = 4, 25*time.Millisecond, ratelimit.None
		})
	}
	return cfg
}

type lossyStack struct {
	*stack
	px       *faultproxy.Proxy
	failures atomic.Int64 // batch item failures reported by any handler
}

// newLossyStack provisions on the endpoint directly, then builds the
// runtime on clients that go through a fault proxy (faults off until
// lose is called).
func newLossyStack(t *testing.T, isolate []string) *lossyStack {
	t.Helper()
	direct := awstest.Config(t)
	ctx := awstest.Context(t)
	const visibility = 30 * time.Second
	cfg, err := backend.Provision(ctx, direct, backend.Names{
		Table: awstest.Name(t, "cairn"), Bucket: awstest.Name(t, "cairn-blobs"), QueuePrefix: awstest.Name(t, "cairn"),
		MaxReceives: 5, Visibility: visibility,
	})
	if err != nil {
		t.Fatal(err)
	}
	px, err := faultproxy.New(awstest.Endpoint(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	lossy := lossyConfig(t, px.URL())
	cfg.AWS, cfg.Endpoint = &lossy, px.URL()
	cfg.SandboxDir = t.TempDir()
	cfg.Env = []string{"PATH=" + os.Getenv("PATH")}
	cfg.LeaseTTL = visibility
	cfg.Workflows.Isolate = isolate
	cfg.Serves = all.Serves
	rt, err := backend.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ls := &lossyStack{px: px}
	ls.stack = &stack{t: t, rt: rt, cfg: cfg, api: lambdafn.APIHandler(rt.API), fns: map[string]harness.Function{},
		harness: &harness.Harness{Client: sqs.NewFromConfig(direct)}}
	queues := []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit}
	if isolate != nil {
		queues = append(queues, contracts.QueueWorkflow)
	}
	for _, q := range queues {
		h := lambdafn.SQSHandler(q, rt.Handle, nil)
		counted := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			resp, err := h(ctx, ev)
			ls.failures.Add(int64(len(resp.BatchItemFailures)))
			return resp, err
		}
		fn := harness.Function{Queue: q, URL: cfg.QueueURLs[q], BatchSize: 10, Visibility: visibility, Handler: counted, Timeout: 30 * time.Second}
		ls.fns[q] = fn
		ls.harness.Functions = append(ls.harness.Functions, fn)
	}
	return ls
}

// lose turns the faults on: the first answer of every write is lost.
func (s *lossyStack) lose() {
	writes := faultproxy.Any(faultproxy.Ops(faultproxy.DynamoWrites...), faultproxy.Ops(faultproxy.S3Writes...),
		faultproxy.Ops(faultproxy.SQSWrites...))
	s.px.SetRule(faultproxy.FirstAttempt(writes, faultproxy.Drop, faultproxy.Reset, faultproxy.ServerError))
}

// drive delivers every queue's messages until done, without ever running
// repair; nothing delivered for 10 s (and not done) is a stuck turn.
func (s *lossyStack) drive(what string, done func() bool, deadline time.Duration) {
	s.t.Helper()
	ctx := context.Background()
	idle := time.Now()
	for end := time.Now().Add(deadline); time.Now().Before(end); {
		if done() {
			return
		}
		n := 0
		for _, fn := range s.harness.Functions {
			k, err := s.harness.Once(ctx, fn)
			if err != nil {
				s.t.Fatal(err)
			}
			n += k
		}
		if n > 0 {
			idle = time.Now()
			continue
		}
		if time.Since(idle) > 10*time.Second {
			s.t.Fatalf("%s: stuck — no message in any queue for 10 s (no repair runs here); proxy log:\n%s", what, s.px.Summary())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s: not done after %s", what, deadline)
}

// checkFaults asserts that answers were lost, every one was retried by
// the SDK, and some retries met their own write's condition failure.
func (s *lossyStack) checkFaults() {
	s.t.Helper()
	faults := s.px.Faults()
	if len(faults) == 0 {
		s.t.Fatal("no answer was lost")
	}
	for _, f := range s.px.Unretried() {
		s.t.Errorf("lost answer never retried by the SDK: %v", f)
	}
	met := 0
	for _, r := range s.px.Retries() {
		if r.ErrorType == "ConditionalCheckFailedException" {
			met++
		}
	}
	if met == 0 {
		s.t.Error("no retry met its own write's condition failure")
	}
	if n := s.failures.Load(); n != 0 {
		s.t.Errorf("%d batch item failures: a handler failed under lost answers", n)
	}
	s.t.Logf("%d answers lost, %d retries met their own write's condition failure; by operation:\n%s",
		len(faults), met, strings.TrimRight(s.px.Summary(), "\n"))
}

func (s *lossyStack) sub(id string) contracts.Submission {
	s.t.Helper()
	got, err := s.rt.Ports.Journal.GetSubmission(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return got
}

// Two turns in one session (the second waits ACCEPTED and is started by the
// first's commit), every write of both losing its first answer: both commit,
// one model call per step, every tool call runs once and finishes once, one
// committed event each, the transcript is both turns once.
func TestTurnsWithLostAnswers(t *testing.T) {
	s := newLossyStack(t, nil)
	scripted := s.rt.Ports.Models["scripted"].(interface{ Calls() int64 })
	s.lose()
	code, sess := s.call("POST", "/v1/sessions", contracts.SessionSpec{Model: "scripted:multi"}, nil)
	if code != http.StatusCreated {
		t.Fatalf("create session: %d %v", code, sess)
	}
	sid := sess["id"].(string)
	var subs []string
	for i, prompt := range []string{"first", "second"} {
		code, su := s.call("POST", "/v1/sessions/"+sid+"/submissions", map[string]string{"prompt": prompt}, map[string]string{"Idempotency-Key": prompt})
		if code != http.StatusAccepted {
			t.Fatalf("submit %d: %d %v", i, code, su)
		}
		subs = append(subs, su["id"].(string))
		// the same key again: the same submission, not a new one
		if code, again := s.call("POST", "/v1/sessions/"+sid+"/submissions", map[string]string{"prompt": prompt}, map[string]string{"Idempotency-Key": prompt}); code != http.StatusOK || again["id"] != su["id"] {
			t.Fatalf("resubmit %d: %d %v, want 200 and %s", i, code, again, su["id"])
		}
	}
	s.drive("two turns", func() bool { return s.sub(subs[0]).Phase.Terminal() && s.sub(subs[1]).Phase.Terminal() }, 3*time.Minute)
	ctx := context.Background()
	for _, id := range subs {
		got := s.sub(id)
		if got.Phase != contracts.PhaseCommitted || got.Step != 1 {
			t.Fatalf("submission %s: %s step %d (%s), want COMMITTED at step 1", id, got.Phase, got.Step, got.Error)
		}
		evs, err := s.rt.Ports.Events.ListEvents(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		committed, finished := 0, map[string]int{}
		for i, e := range evs {
			if i > 0 && e.Seq <= evs[i-1].Seq {
				t.Errorf("events of %s out of order: seq %d after %d", id, e.Seq, evs[i-1].Seq)
			}
			switch e.Type {
			case contracts.EventCommitted:
				committed++
			case contracts.EventToolFinished:
				finished[e.CallID]++
			}
		}
		if committed != 1 || len(finished) != 4 {
			t.Errorf("submission %s: %d committed events, %d calls finished (%v); want 1 and 4", id, committed, len(finished), finished)
		}
		for call, n := range finished {
			if n != 1 {
				t.Errorf("submission %s: call %s finished %d times", id, call, n)
			}
		}
	}
	if n := scripted.Calls(); n != 4 {
		t.Errorf("model calls = %d, want 4 (one per step, two steps per turn)", n)
	}
	if out, _ := os.ReadFile(s.cfg.SandboxDir + "/" + sid + "/log.txt"); string(out) != "ran\nran\n" {
		t.Errorf("the mutating command ran other than once per turn: log.txt %q", out)
	}
	tr := s.transcript(sid)
	if len(tr) != 8 || strings.Count(strings.Join(tr, "\n"), "All four calls finished.") != 2 ||
		!strings.HasPrefix(tr[0], "user: text=first") || !strings.HasPrefix(tr[4], "user: text=second") {
		t.Errorf("transcript, want both turns once, chained:\n%s", strings.Join(tr, "\n"))
	}
	s.checkFaults()
}

// A workflow run whose every write loses its first answer: run creation,
// node puts, child turns, node results and run updates. It succeeds with
// every node's turn committed once, and one run listed.
func TestWorkflowWithLostAnswers(t *testing.T) {
	s := newLossyStack(t, buildIsolate(t))
	if s.rt.Driver == nil {
		t.Fatal("workflows not served")
	}
	s.lose()
	script := "def main(input):\n    rs = wait([start(\"part \" + p, model=\"scripted:plain\", key=p) for p in input[\"parts\"]])\n    return {\"n\": len(rs), \"ok\": all([r.ok for r in rs])}\n"
	code, wf := s.call("POST", "/v1/workflows", map[string]string{"name": "fan", "script": script}, nil)
	if code != http.StatusCreated {
		t.Fatalf("create workflow: %d %v", code, wf)
	}
	wfID := wf["id"].(string)
	code, run := s.call("POST", "/v1/workflows/"+wfID+"/runs", map[string]any{"input": map[string]any{"parts": []string{"a", "b", "c"}}}, map[string]string{"Idempotency-Key": "r1"})
	if code != http.StatusCreated {
		t.Fatalf("start run: %d %v, want 201 (a lost answer is not an existing run)", code, run)
	}
	runID := run["id"].(string)
	ctx := context.Background()
	var got contracts.WorkflowRun
	s.drive("workflow run", func() bool {
		r, err := s.rt.Ports.Workflows.GetRun(ctx, runID)
		got = r
		return err == nil && r.Status.Terminal()
	}, 3*time.Minute)
	if got.Status != contracts.RunSucceeded || string(got.Result) != `{"n":3,"ok":true}` {
		t.Fatalf("run %s %s: %s", got.Status, got.Error, got.Result)
	}
	nodes, err := s.rt.Ports.Workflows.ListNodes(ctx, runID)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("%d nodes (%v), want 3", len(nodes), err)
	}
	for _, n := range nodes {
		if n.Result == nil || !n.Result.OK {
			t.Errorf("node %s without its result: %+v", n.ID, n.Result)
		}
		subs, err := s.rt.Ports.Journal.ListSubmissions(ctx, n.SessionID, "", 0)
		if err != nil || len(subs) != 1 || subs[0].Phase != contracts.PhaseCommitted {
			t.Errorf("node %s: %d submissions (%v), want one committed turn", n.ID, len(subs), err)
		}
	}
	if runs, err := s.rt.Ports.Workflows.ListRuns(ctx, wfID, 0); err != nil || len(runs) != 1 {
		t.Errorf("%d runs listed (%v), want 1", len(runs), err)
	}
	s.checkFaults()
}

// The case the issue saw: the write that moves a fresh submission from
// ACCEPTED to (0, MODEL) in begin() is applied, its answer lost. Taken for
// a conflict, begin() returned without enqueueing and the turn sat in MODEL
// with no message anywhere; now the retry's own write is recognised, the
// wake-up is sent and the turn commits without repair.
func TestBeginWithLostAnswer(t *testing.T) {
	s := newLossyStack(t, nil)
	s.px.SetRule(faultproxy.Once(faultproxy.All(faultproxy.Ops("PutItem"), faultproxy.BodyContains(`"phase":{"S":"MODEL"}`)), faultproxy.Reset))
	_, sub := s.submit(contracts.SessionSpec{Model: "scripted:plain"})
	s.drive("a turn whose begin() lost its answer", func() bool { return s.sub(sub).Phase.Terminal() }, time.Minute)
	if got := s.sub(sub); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s (%s), want COMMITTED", got.Phase, got.Error)
	}
	if f := s.px.Faults(); len(f) != 1 {
		t.Fatalf("faults = %v, want the one", f)
	}
	if r := s.px.Retries(); len(r) != 1 || r[0].ErrorType != "ConditionalCheckFailedException" {
		t.Fatalf("retries = %v, want one meeting its own write", r)
	}
}
