package backend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/all"
	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// stack is the serverless shape on the endpoint: the runtime the functions
// would build, the api handler fed API Gateway v2 events, and the harness
// playing Lambda's SQS event source mappings.
type stack struct {
	t       testing.TB
	rt      *assemble.Runtime
	cfg     backend.Config
	api     func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	harness *harness.Harness
	fns     map[string]harness.Function
}

type wrap func(name string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

func newStack(t testing.TB, visibility time.Duration, maxReceives int, w wrap) *stack {
	t.Helper()
	awsCfg := awstest.Config(t)
	ctx := awstest.Context(t)
	cfg, err := backend.Provision(ctx, awsCfg, backend.Names{
		Table: awstest.Name(t, "cairn"), Bucket: awstest.Name(t, "cairn-blobs"), QueuePrefix: awstest.Name(t, "cairn"),
		MaxReceives: maxReceives, Visibility: visibility,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.SandboxDir = t.TempDir()
	cfg.Env = []string{"PATH=" + os.Getenv("PATH")}
	cfg.LeaseTTL = visibility
	cfg.Serves = all.Serves // every function's part in one process, as cairn dev --backend aws
	rt, err := backend.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, rt: rt, cfg: cfg, api: lambdafn.APIHandler(rt.API), fns: map[string]harness.Function{}}
	s.harness = &harness.Harness{Client: sqs.NewFromConfig(awsCfg)}
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit} {
		h := lambdafn.SQSHandler(q, rt.Engine.Handle, nil)
		if w != nil {
			h = w(q, h)
		}
		fn := harness.Function{Queue: q, URL: cfg.QueueURLs[q], BatchSize: 10, Visibility: visibility, Handler: h, Timeout: 30 * time.Second}
		s.fns[q] = fn
		s.harness.Functions = append(s.harness.Functions, fn)
	}
	return s
}

// e2eCaller is the IAM principal the api calls of these tests are signed
// by, as API Gateway's IAM authorizer reports it.
const e2eCaller = "arn:aws:sts::000000000000:assumed-role/cairn-e2e/test"

func (s *stack) call(method, path string, body any, hdr map[string]string) (int, map[string]any) {
	s.t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	h := http.Header{}
	for k, v := range hdr {
		h.Set(k, v)
	}
	resp, err := s.api(context.Background(), harness.APIEvent(method, path, h, raw, harness.IAM(e2eCaller)))
	if err != nil {
		s.t.Fatal(err)
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(resp.Body), &out)
	return resp.StatusCode, out
}

// submit creates a session and submits a prompt through the api handler.
func (s *stack) submit(spec contracts.SessionSpec) (sid, sub string) {
	s.t.Helper()
	code, sess := s.call("POST", "/v1/sessions", spec, nil)
	if code != http.StatusCreated {
		s.t.Fatalf("create session: %d %v", code, sess)
	}
	sid = sess["id"].(string)
	code, su := s.call("POST", "/v1/sessions/"+sid+"/submissions", map[string]string{"prompt": "go"}, map[string]string{"Idempotency-Key": "k1"})
	if code != http.StatusAccepted {
		s.t.Fatalf("submit: %d %v", code, su)
	}
	return sid, su["id"].(string)
}

// until drives every function's queue (and repair) until the submission
// is terminal or the deadline passes.
func (s *stack) until(sub string, deadline time.Duration) contracts.Submission {
	s.t.Helper()
	ctx := context.Background()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		got, err := s.rt.Ports.Journal.GetSubmission(ctx, sub)
		if err != nil {
			s.t.Fatal(err)
		}
		if got.Phase.Terminal() {
			return got
		}
		n := 0
		for _, fn := range s.harness.Functions {
			k, err := s.harness.Once(ctx, fn)
			if err != nil {
				s.t.Fatal(err)
			}
			n += k
		}
		if n == 0 {
			if _, err := s.rt.Repair.Run(ctx); err != nil {
				s.t.Logf("repair: %v", err)
			}
		}
	}
	got, _ := s.rt.Ports.Journal.GetSubmission(ctx, sub)
	s.t.Fatalf("submission %s not terminal after %s: %s step %d", sub, deadline, got.Phase, got.Step)
	return got
}

func (s *stack) transcript(sid string) []string {
	s.t.Helper()
	sess, err := s.rt.Ports.Journal.GetSession(context.Background(), sid)
	if err != nil {
		s.t.Fatal(err)
	}
	nodes, err := s.rt.Ports.Transcript.Path(context.Background(), sess.Head)
	if err != nil {
		s.t.Fatal(err)
	}
	return enginetest.Render(nodes)
}

func TestEndToEndOnEndpoint(t *testing.T) {
	s := newStack(t, 2*time.Second, 5, nil)
	sid, sub := s.submit(contracts.SessionSpec{Model: "scripted:demo"})
	got := s.until(sub, 60*time.Second)
	if got.Phase != contracts.PhaseCommitted || got.Step != 3 {
		t.Fatalf("%s step %d: %s", got.Phase, got.Step, got.Error)
	}
	code, view := s.call("GET", "/v1/sessions/"+sid+"/submissions/"+sub, nil, nil)
	if code != 200 || view["phase"] != "COMMITTED" {
		t.Fatalf("api view: %d %v", code, view)
	}
	if tr := s.transcript(sid); len(tr) != 8 || !strings.Contains(tr[7], "Done: I wrote notes.txt") {
		t.Fatalf("transcript:\n%s", strings.Join(tr, "\n"))
	}
	if s.harness.Invocations() == 0 {
		t.Fatal("no Lambda invocations counted")
	}
}

// Every message delivered twice, and every batch handed to two concurrent
// invocations: one model call per step, each mutating tool once.
func TestDuplicateAndConcurrentDelivery(t *testing.T) {
	var calls atomic.Int64
	concurrent := func(name string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			calls.Add(1)
			var wg sync.WaitGroup
			var second events.SQSEventResponse
			wg.Add(1)
			go func() { defer wg.Done(); second, _ = h(ctx, ev) }()
			first, err := h(ctx, ev)
			wg.Wait()
			first.BatchItemFailures = append(first.BatchItemFailures, second.BatchItemFailures...)
			return first, err
		}
	}
	s := newStack(t, 2*time.Second, 5, concurrent)
	scripted := s.rt.Ports.Models["scripted"].(interface{ Calls() int64 })
	sid, sub := s.submit(contracts.SessionSpec{Model: "scripted:multi"})
	// deliver every wake-up a second time under another deduplication id
	for _, q := range []string{contracts.QueueModel} {
		m := contracts.Message{Kind: q, SessionID: sid, SubmissionID: sub, Phase: contracts.PhaseModel, Nonce: "dup"}
		if err := s.rt.Ports.Queue.Send(context.Background(), q, m); err != nil {
			t.Fatal(err)
		}
	}
	got := s.until(sub, 60*time.Second)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s: %s", got.Phase, got.Error)
	}
	if n := scripted.Calls(); n != 2 {
		t.Fatalf("model calls = %d, want 2 (one per step)", n)
	}
	out, _ := os.ReadFile(s.cfg.SandboxDir + "/" + sid + "/log.txt")
	if string(out) != "ran\n" {
		t.Fatalf("mutating tool ran more than once: %q", out)
	}
	if calls.Load() == 0 {
		t.Fatal("the concurrent wrapper never ran")
	}
}

// A handler that panics, then one that overruns its deadline (the final
// step's model phase, which commits the answer): the message reappears
// after the visibility timeout and the turn still commits.
func TestPanicAndDeadlineRecover(t *testing.T) {
	var panicked, overran atomic.Bool
	var models atomic.Int64
	flaky := func(name string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			if name == contracts.QueueTools && panicked.CompareAndSwap(false, true) {
				panic("injected crash mid-phase")
			}
			if name == contracts.QueueModel && models.Add(1) == 2 && overran.CompareAndSwap(false, true) {
				short, cancel := context.WithTimeout(ctx, time.Nanosecond)
				defer cancel()
				<-short.Done()
				return h(short, ev)
			}
			return h(ctx, ev)
		}
	}
	s := newStack(t, 1*time.Second, 5, flaky)
	_, sub := s.submit(contracts.SessionSpec{Model: "scripted:multi"})
	got := s.until(sub, 90*time.Second)
	if got.Phase != contracts.PhaseCommitted || !panicked.Load() || !overran.Load() {
		t.Fatalf("%s (%s), panicked=%v overran=%v", got.Phase, got.Error, panicked.Load(), overran.Load())
	}
}

// A message no handler can process lands in the DLQ; repair turns it into
// FAILED with a reason the API shows.
func TestPoisonMessageEndsFailed(t *testing.T) {
	poison := func(name string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			if name == contracts.QueueModel {
				var out events.SQSEventResponse
				for _, r := range ev.Records {
					out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				}
				return out, nil
			}
			return h(ctx, ev)
		}
	}
	s := newStack(t, 1*time.Second, 2, poison)
	sid, sub := s.submit(contracts.SessionSpec{Model: "scripted:plain"})
	got := s.until(sub, 90*time.Second)
	if got.Phase != contracts.PhaseFailed || !strings.HasPrefix(got.Error, "poison:") {
		t.Fatalf("%s %q, want FAILED poison:…", got.Phase, got.Error)
	}
	_, view := s.call("GET", "/v1/sessions/"+sid+"/submissions/"+sub, nil, nil)
	if view["phase"] != "FAILED" || !strings.HasPrefix(view["error"].(string), "poison:") {
		t.Fatalf("api does not show the reason: %v", view)
	}
}

var _ = slices.Equal[[]string]
