package dynamo

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnrun/cairn/shared/aws/s3blob"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/journaltest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/storetest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/workflowtest"
	"github.com/cairnrun/cairn/shared/testkit/faultproxy"
)

// Lost answers: a fault proxy between the Store's SDK clients and the
// endpoint lets a write through to the endpoint and then drops, resets,
// replaces (500) or withholds its answer, so the SDK's retryer resends it
// and the retry meets the first attempt's effect.

// lossyConfig is the test kit's SDK config pointed at a fault proxy, with
// the retry policy production's DynamoDB client gets by default (standard
// mode, 4 attempts) minus the client-side retry quota (500 tokens, 14 per
// retry, not refunded when the retry fails its condition), which a test
// injecting a fault into every write would drain, and with a 2 ms base
// backoff instead of 25 ms (the suites lose ~1,000 answers in a row).
// timeout > 0 bounds each HTTP attempt (for Stall).
func lossyConfig(t *testing.T, url string, timeout time.Duration) aws.Config {
	cfg := awstest.Config(t)
	cfg.BaseEndpoint = aws.String(url)
	cfg.RetryMaxAttempts = 0
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts, o.BaseDelay, o.RateLimiter = 4, 2*time.Millisecond, ratelimit.None
		})
	}
	if timeout > 0 {
		hc := awstest.SerialHTTP()
		hc.Timeout = timeout
		cfg.HTTPClient = hc
	}
	return cfg
}

// faulty returns a Store on the shared table whose DynamoDB and S3 clients
// go through a fault proxy applying rule, and the proxy.
func (e *testEnv) faulty(t *testing.T, opts Options, rule faultproxy.Rule, timeout time.Duration) (*Store, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.New(awstest.Endpoint(t), rule)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	cfg := lossyConfig(t, p.URL(), timeout)
	opts.Table = e.table
	if opts.Blobs == nil {
		opts.Blobs = s3blob.New(s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }), e.bucket)
	}
	s, err := New(dynamodb.NewFromConfig(cfg), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// checkRetried fails the test unless every fault was retried by the SDK and
// (when want is set) some retry met the error want: the first attempt's
// effect.
func checkRetried(t *testing.T, p *faultproxy.Proxy, want string) {
	t.Helper()
	if len(p.Faults()) == 0 {
		t.Fatalf("no fault injected; proxy log:\n%s", p.Summary())
	}
	for _, f := range p.Unretried() {
		t.Errorf("lost answer never retried by the SDK: %v", f)
	}
	if want == "" {
		return
	}
	for _, r := range p.Retries() {
		if r.ErrorType == want {
			return
		}
	}
	t.Errorf("no retry met %s; proxy log:\n%s", want, p.Summary())
}

const condFailed = "ConditionalCheckFailedException"

// lose matches the request of DynamoDB operation op whose body contains
// every one of parts.
func lose(op string, parts ...string) func(faultproxy.Request) bool {
	m := []func(faultproxy.Request) bool{faultproxy.Ops(op)}
	for _, s := range parts {
		m = append(m, faultproxy.BodyContains(s))
	}
	return faultproxy.All(m...)
}

func sv(s string) string { return `{"S":"` + s + `"}` }

type lostCase struct {
	name string
	// match picks the write (of ids prefixed p) whose first answer is lost.
	match func(p string) func(faultproxy.Request) bool
	// cond is the error the SDK's retry must meet ("" for writes whose
	// retry simply succeeds again).
	cond string
	// run does the write through s (behind the proxy px), checking what
	// it returns and what d (direct to the endpoint) reads afterwards.
	run func(t *testing.T, ctx context.Context, s, d *Store, px *faultproxy.Proxy, p string)
}

var lostCases = []lostCase{
	{"CreateSession", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv("SESS#"+p), sv(skSession)) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			sess, err := s.CreateSession(ctx, contracts.Session{ID: p, CreatedAt: t0})
			if err != nil || sess.Version != 1 {
				t.Fatalf("CreateSession = version %d, %v; want version 1 (the retry found our own session)", sess.Version, err)
			}
			if _, err := s.CreateSession(ctx, contracts.Session{ID: p, CreatedAt: t0}); !errors.Is(err, contracts.ErrExists) {
				t.Fatalf("CreateSession again (another call, same record): %v, want ErrExists", err)
			}
		}},
	{"UpdateSession", func(p string) func(faultproxy.Request) bool {
		return lose("PutItem", sv("SESS#"+p), sv(skSession), `"version":{"N":"2"}`)
	}, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			sess := mustSession(t, ctx, d, p)
			sess.Head = "h1"
			got, err := s.UpdateSession(ctx, sess, 1)
			if err != nil || got.Version != 2 {
				t.Fatalf("UpdateSession = version %d, %v; want version 2", got.Version, err)
			}
			if read, _ := d.GetSession(ctx, p); read.Version != 2 || read.Head != "h1" {
				t.Fatalf("stored: version %d head %q", read.Version, read.Head)
			}
		}},
	{"UpdateSessionMovedOn", func(p string) func(faultproxy.Request) bool {
		return lose("PutItem", sv("SESS#"+p), sv(skSession), `"version":{"N":"2"}`)
	}, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, px *faultproxy.Proxy, p string) {
			sess := mustSession(t, ctx, d, p)
			px.SetHook(func(faultproxy.Request, faultproxy.Action) { // a later writer, before our retry
				cur, err := d.GetSession(ctx, p)
				cur.Head = "later"
				if err == nil {
					_, err = d.UpdateSession(ctx, cur, cur.Version)
				}
				if err != nil {
					t.Errorf("the later writer: %v", err)
				}
			})
			sess.Head = "h1"
			if _, err := s.UpdateSession(ctx, sess, 1); !errors.Is(err, contracts.ErrConflict) {
				t.Fatalf("UpdateSession moved on by another: %v, want ErrConflict (the item cannot prove it was ours)", err)
			}
			if read, _ := d.GetSession(ctx, p); read.Version != 3 || read.Head != "later" {
				t.Fatalf("stored: version %d head %q", read.Version, read.Head)
			}
		}},
	{"CreateSubmission/claim", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv("IDEM#k")) }, condFailed, createWithKey},
	{"CreateSubmission/pointer", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv(skPointer)) }, condFailed, createWithKey},
	{"CreateSubmission/record", func(p string) func(faultproxy.Request) bool { return lose("PutItem", `"phase":`) }, condFailed, createWithKey},
	{"CreateSubmission/pointerNoKey", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv(skPointer)) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			sub, created, err := s.CreateSubmission(ctx, newSub(p, p+"-sess", contracts.PhaseAccepted, t0))
			if err != nil || !created || sub.ID != p {
				t.Fatalf("CreateSubmission = %s created %v, %v; want created", sub.ID, created, err)
			}
			if _, created, err := d.CreateSubmission(ctx, newSub(p, p+"-sess", contracts.PhaseAccepted, t0)); err != nil || created {
				t.Fatalf("same id again: created %v, %v; want the existing one", created, err)
			}
		}},
	{"UpdateSubmission", func(p string) func(faultproxy.Request) bool { return lose("PutItem", `"phase":`, sv(recordSK(p))) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			sub := mustSub(t, ctx, d, p)
			sub.Phase = contracts.PhaseModel
			got, err := s.UpdateSubmission(ctx, sub, 1)
			if err != nil || got.Version != 2 {
				t.Fatalf("UpdateSubmission = version %d, %v; want version 2", got.Version, err)
			}
			if read, _ := d.GetSubmission(ctx, p); read.Version != 2 || read.Phase != contracts.PhaseModel {
				t.Fatalf("stored: version %d phase %s", read.Version, read.Phase)
			}
		}},
	{"UpdateSubmissionMovedOn", func(p string) func(faultproxy.Request) bool { return lose("PutItem", `"phase":`, sv(recordSK(p))) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, px *faultproxy.Proxy, p string) {
			sub := mustSub(t, ctx, d, p)
			px.SetHook(func(faultproxy.Request, faultproxy.Action) {
				cur, err := d.GetSubmission(ctx, p)
				cur.Phase = contracts.PhaseCancelled
				if err == nil {
					_, err = d.UpdateSubmission(ctx, cur, cur.Version)
				}
				if err != nil {
					t.Errorf("the later writer: %v", err)
				}
			})
			sub.Phase = contracts.PhaseModel
			if _, err := s.UpdateSubmission(ctx, sub, 1); !errors.Is(err, contracts.ErrConflict) {
				t.Fatalf("UpdateSubmission moved on by another: %v, want ErrConflict", err)
			}
		}},
	{"CreateWorkflow", func(p string) func(faultproxy.Request) bool {
		return lose("PutItem", sv(workflowPK(p)), sv(skWorkflow))
	}, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			wf := contracts.Workflow{ID: p, Name: "n", Script: "x", CreatedAt: t0}
			if _, err := s.Workflows().CreateWorkflow(ctx, wf); err != nil {
				t.Fatalf("CreateWorkflow: %v, want our own workflow found by the retry", err)
			}
			if _, err := s.Workflows().CreateWorkflow(ctx, wf); !errors.Is(err, contracts.ErrExists) {
				t.Fatalf("CreateWorkflow again: %v, want ErrExists", err)
			}
		}},
	{"CreateSchedule", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv(schedulePK(p))) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			sc := contracts.Schedule{ID: p, WorkflowID: p + "-wf", Expression: "rate(5 minutes)", CreatedAt: t0}
			if _, err := s.Workflows().CreateSchedule(ctx, sc); err != nil {
				t.Fatalf("CreateSchedule: %v", err)
			}
			if _, err := s.Workflows().CreateSchedule(ctx, sc); !errors.Is(err, contracts.ErrExists) {
				t.Fatalf("CreateSchedule again: %v, want ErrExists", err)
			}
		}},
	{"CreateRun/run", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv(runPK(p)), sv(skRun)) }, condFailed, createRun},
	{"CreateRun/pointer", func(p string) func(faultproxy.Request) bool {
		return lose("PutItem", sv(workflowPK(p+"-wf")), `"run":`)
	}, condFailed, createRun},
	{"UpdateRun", func(p string) func(faultproxy.Request) bool {
		return lose("PutItem", sv(runPK(p)), `"version":{"N":"2"}`)
	}, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			r := mustRun(t, ctx, d, p)
			r.Evaluations = 1
			got, err := s.Workflows().UpdateRun(ctx, r, 1)
			if err != nil || got.Version != 2 {
				t.Fatalf("UpdateRun = version %d, %v; want 2", got.Version, err)
			}
		}},
	{"UpdateRunMovedOn", func(p string) func(faultproxy.Request) bool {
		return lose("PutItem", sv(runPK(p)), `"version":{"N":"2"}`)
	}, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, px *faultproxy.Proxy, p string) {
			r := mustRun(t, ctx, d, p)
			px.SetHook(func(faultproxy.Request, faultproxy.Action) {
				cur, err := d.Workflows().GetRun(ctx, p)
				cur.Status = contracts.RunFailed
				if err == nil {
					_, err = d.Workflows().UpdateRun(ctx, cur, cur.Version)
				}
				if err != nil {
					t.Errorf("the later writer: %v", err)
				}
			})
			r.Evaluations = 1
			if _, err := s.Workflows().UpdateRun(ctx, r, 1); !errors.Is(err, contracts.ErrConflict) {
				t.Fatalf("UpdateRun moved on: %v, want ErrConflict", err)
			}
		}},
	{"PutWorkflowNode", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv(runPK(p)), sv(nodeSK("n1"))) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			n := contracts.WorkflowNode{RunID: p, ID: "n1", Seq: 3, CreatedAt: t0}
			got, created, err := s.Workflows().PutNode(ctx, n)
			if err != nil || !created || got.Seq != 3 {
				t.Fatalf("PutNode = seq %d created %v, %v; want created", got.Seq, created, err)
			}
			if _, created, err := s.Workflows().PutNode(ctx, n); err != nil || created {
				t.Fatalf("PutNode again: created %v, %v; want the existing node", created, err)
			}
		}},
	{"SetNodeResult", func(p string) func(faultproxy.Request) bool {
		return lose("UpdateItem", sv(runPK(p)), sv(nodeSK("n1")))
	}, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			if _, _, err := d.Workflows().PutNode(ctx, contracts.WorkflowNode{RunID: p, ID: "n1", CreatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			if err := s.Workflows().SetNodeResult(ctx, p, "n1", contracts.NodeResult{OK: true, Output: "o"}); err != nil {
				t.Fatalf("SetNodeResult: %v", err)
			}
			ns, err := d.Workflows().ListNodes(ctx, p)
			if err != nil || len(ns) != 1 || ns[0].Result == nil || ns[0].Result.Output != "o" {
				t.Fatalf("ListNodes = %+v, %v", ns, err)
			}
		}},
	{"PutToolResult", func(p string) func(faultproxy.Request) bool { return lose("UpdateItem", sv(submissionPK(p)), `"#r"`) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			if err := s.PutToolResult(ctx, p, 0, contracts.ToolResult{CallID: "c", Content: "out"}); err != nil {
				t.Fatalf("PutToolResult: %v", err)
			}
			recs, err := d.ToolRecords(ctx, p, 0)
			if err != nil || len(recs) != 1 || recs["c"].Result == nil || recs["c"].Result.Content != "out" {
				t.Fatalf("ToolRecords = %+v, %v", recs, err)
			}
		}},
	{"MarkToolStarted", func(p string) func(faultproxy.Request) bool {
		return lose("UpdateItem", sv(submissionPK(p)), `"#started"`)
	}, "",
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			if err := s.MarkToolStarted(ctx, p, 0, "c"); err != nil {
				t.Fatalf("MarkToolStarted: %v", err)
			}
			if recs, err := d.ToolRecords(ctx, p, 0); err != nil || !recs["c"].Started {
				t.Fatalf("ToolRecords = %+v, %v", recs, err)
			}
		}},
	{"AppendEvents/counter", func(p string) func(faultproxy.Request) bool { return lose("UpdateItem", sv(skEventSeq)) }, "", appendEvents},
	{"AppendEvents/event", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv(eventPrefix+"k2")) }, condFailed, appendEvents},
	{"AppendEvents/text_delta", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv("d2")) }, condFailed, appendDeltas},
	{"PutChunks", func(p string) func(faultproxy.Request) bool {
		return lose("PutItem", sv(streamPK(p)), chunkPrefix+"0000000000") // the flush is one item
	}, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			evs := []contracts.ModelEvent{{Type: contracts.ModelText, Text: "a"}, {Type: contracts.ModelText, Text: "b"}, {Type: contracts.ModelText, Text: "c"}}
			if err := s.PutChunks(ctx, p, 0, evs...); err != nil {
				t.Fatalf("PutChunks: %v", err)
			}
			if _, err := s.Complete(ctx, p, contracts.ModelResponse{Text: "abc"}); err != nil {
				t.Fatal(err)
			}
			st, err := d.GetStream(ctx, p)
			if err != nil || len(st.Chunks) != 3 || st.Chunks[1].Text != "b" || st.Done == nil {
				t.Fatalf("GetStream = %+v, %v", st, err)
			}
		}},
	{"Complete", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv(streamPK(p)), sv(skDone)) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			if _, err := s.Complete(ctx, p, contracts.ModelResponse{Text: "first"}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if _, err := s.Complete(ctx, p, contracts.ModelResponse{Text: "second"}); err != nil {
				t.Fatal(err)
			}
			if st, err := d.GetStream(ctx, p); err != nil || st.Done == nil || st.Done.Text != "first" {
				t.Fatalf("GetStream = %+v, %v", st, err)
			}
		}},
	{"TranscriptPutNode", func(p string) func(faultproxy.Request) bool { return lose("PutItem", sv(nodePK(p)), sv(skNode)) }, condFailed,
		func(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
			n := contracts.Node{ID: p, SessionID: p, SubmissionID: p, Role: contracts.RoleUser,
				Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "hi"}}, CreatedAt: t0}
			if err := s.PutNode(ctx, n); err != nil {
				t.Fatalf("PutNode: %v", err)
			}
			if got, err := d.GetNode(ctx, p); err != nil || got.Blocks[0].Text != "hi" {
				t.Fatalf("GetNode = %+v, %v", got, err)
			}
		}},
}

func mustSession(t *testing.T, ctx context.Context, d *Store, id string) contracts.Session {
	t.Helper()
	sess, err := d.CreateSession(ctx, contracts.Session{ID: id, CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func mustSub(t *testing.T, ctx context.Context, d *Store, id string) contracts.Submission {
	t.Helper()
	sub, _, err := d.CreateSubmission(ctx, newSub(id, id+"-sess", contracts.PhaseAccepted, t0))
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func mustRun(t *testing.T, ctx context.Context, d *Store, id string) contracts.WorkflowRun {
	t.Helper()
	r, _, err := d.Workflows().CreateRun(ctx, contracts.WorkflowRun{ID: id, WorkflowID: id + "-wf", Status: contracts.RunRunning, StartedAt: t0, UpdatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func createWithKey(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
	sub := newSub(p, p+"-sess", contracts.PhaseAccepted, t0)
	sub.IdempotencyKey = "k"
	got, created, err := s.CreateSubmission(ctx, sub)
	if err != nil || !created || got.ID != p || got.Version != 1 {
		t.Fatalf("CreateSubmission = %s v%d created %v, %v; want created (the retry found our own write)", got.ID, got.Version, created, err)
	}
	if read, err := d.GetSubmission(ctx, p); err != nil || read.Version != 1 {
		t.Fatalf("GetSubmission = %+v, %v", read, err)
	}
	dup := newSub(p+"-dup", p+"-sess", contracts.PhaseAccepted, t0)
	dup.IdempotencyKey = "k"
	if got, created, err := d.CreateSubmission(ctx, dup); err != nil || created || got.ID != p {
		t.Fatalf("duplicate = %s created %v, %v; want the first, not created", got.ID, created, err)
	}
}

func createRun(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
	r := contracts.WorkflowRun{ID: p, WorkflowID: p + "-wf", Status: contracts.RunRunning, StartedAt: t0, UpdatedAt: t0}
	got, created, err := s.Workflows().CreateRun(ctx, r)
	if err != nil || !created || got.Version != 1 {
		t.Fatalf("CreateRun = v%d created %v, %v; want created", got.Version, created, err)
	}
	if _, created, err := d.Workflows().CreateRun(ctx, r); err != nil || created {
		t.Fatalf("CreateRun again: created %v, %v; want the existing run", created, err)
	}
	if runs, err := d.Workflows().ListRuns(ctx, p+"-wf", 0); err != nil || len(runs) != 1 {
		t.Fatalf("ListRuns = %d runs, %v; want 1", len(runs), err)
	}
}

func appendEvents(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
	evs := []contracts.Event{
		{SubmissionID: p, Key: "k1", Type: contracts.EventStep, At: t0},
		{SubmissionID: p, Key: "k2", Type: contracts.EventStep, Step: 1, At: t0},
	}
	if err := s.AppendEvents(ctx, evs...); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	if err := s.AppendEvents(ctx, contracts.Event{SubmissionID: p, Key: "k3", Type: contracts.EventCommitted, At: t0}); err != nil {
		t.Fatal(err)
	}
	got, err := d.ListEvents(ctx, p, 0, 0)
	if err != nil || len(got) != 3 || got[0].Key != "k1" || got[1].Key != "k2" || got[2].Key != "k3" ||
		got[0].Seq >= got[1].Seq || got[1].Seq >= got[2].Seq {
		t.Fatalf("ListEvents = %+v, %v; want k1, k2, k3 once each, seqs increasing", got, err)
	}
}

func appendDeltas(t *testing.T, ctx context.Context, s, d *Store, _ *faultproxy.Proxy, p string) {
	evs := []contracts.Event{
		{SubmissionID: p, Key: "d1", Type: contracts.EventTextDelta, Text: "hel", At: t0},
		{SubmissionID: p, Key: "d2", Type: contracts.EventTextDelta, Text: "lo", At: t0},
	}
	if err := s.AppendEvents(ctx, evs...); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	if err := s.AppendEvents(ctx, evs[1]); err != nil { // the same store again: a no-op
		t.Fatal(err)
	}
	got, err := d.ListEvents(ctx, p, 0, 0)
	if err != nil || len(got) != 2 || got[0].Key != "d1" || got[1].Key != "d2" || got[1].Text != "lo" || got[0].Seq >= got[1].Seq {
		t.Fatalf("ListEvents = %+v, %v; want d1, d2 once each, seqs increasing", got, err)
	}
}

// TestLostAnswers loses the first answer of one write of each kind the
// adapter makes, with each way of losing it, and checks that the call
// returns what a success returns (or, when a later writer moved the item
// on before the retry, today's conflict).
func TestLostAnswers(t *testing.T) {
	e := env(t)
	d := e.store(t, Options{})
	for _, action := range []faultproxy.Action{faultproxy.Drop, faultproxy.Reset, faultproxy.ServerError} {
		t.Run(action.String(), func(t *testing.T) {
			for _, tc := range lostCases {
				t.Run(tc.name, func(t *testing.T) {
					ctx := awstest.Context(t)
					p := uniq(t)
					s, px := e.faulty(t, Options{}, faultproxy.Once(tc.match(p), action), 0)
					tc.run(t, ctx, s, d, px, p)
					checkRetried(t, px, tc.cond)
				})
			}
		})
	}
}

// TestLostAnswersTimeout withholds the answers instead, until the client's
// per-attempt timeout gives up (the production client has no such timeout:
// a stalled answer waits for the caller's deadline, see the package doc).
func TestLostAnswersTimeout(t *testing.T) {
	e := env(t)
	d := e.store(t, Options{})
	for _, tc := range lostCases {
		switch tc.name {
		case "CreateSession", "CreateSubmission/claim", "UpdateSubmission", "CreateRun/run":
		default:
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			ctx := awstest.Context(t)
			p := uniq(t)
			// 2 s: far above an answer of the endpoint's, so only the
			// stalled one times out.
			s, px := e.faulty(t, Options{}, faultproxy.Once(tc.match(p), faultproxy.Stall), 2*time.Second)
			tc.run(t, ctx, s, d, px, p)
			checkRetried(t, px, tc.cond)
		})
	}
}

// TestLostAnswerOfClaimCheck loses the answer of the S3 PutObject of a
// claim-checked body: the retry's If-None-Match fails (412) on our own
// blob, which PutBlob takes as written.
func TestLostAnswerOfClaimCheck(t *testing.T) {
	e := env(t)
	ctx := awstest.Context(t)
	p := uniq(t)
	s, px := e.faulty(t, Options{ClaimCheckBytes: 1}, faultproxy.Once(faultproxy.Ops("PUT"), faultproxy.Reset), 0)
	if _, err := s.CreateSession(ctx, contracts.Session{ID: p, CreatedAt: t0}); err != nil {
		t.Fatalf("CreateSession (claim-checked): %v", err)
	}
	if got, err := e.store(t, Options{}).GetSession(ctx, p); err != nil || got.ID != p {
		t.Fatalf("GetSession = %+v, %v", got, err)
	}
	checkRetried(t, px, "PreconditionFailed")
}

// TestCreateCompletedByADuplicateIsCreated is the RacingCreates flake made
// deterministic: the creator wins the idempotency claim, then a duplicate
// finds the claim without its record and completes the creation (pointer,
// record) before the creator writes its pointer. The creator must still
// report created=true — before write ids it found the pointer "taken" and
// returned created=false, like every duplicate: 0 created out of 16.
func TestCreateCompletedByADuplicateIsCreated(t *testing.T) {
	e := env(t)
	ctx := awstest.Context(t)
	p := uniq(t)
	held, release := make(chan struct{}), make(chan struct{})
	hold := func(r faultproxy.Request) faultproxy.Action {
		if r.Op == "PutItem" && r.Attempt == 1 && bytes.Contains(r.Body, []byte(sv(skPointer))) && bytes.Contains(r.Body, []byte(sv(submissionPK(p+"-1")))) {
			close(held)
			<-release // forwarded only once the duplicate is done
		}
		return faultproxy.Pass
	}
	creator, _ := e.faulty(t, Options{}, hold, 0)
	first := newSub(p+"-1", p+"-sess", contracts.PhaseAccepted, t0)
	first.IdempotencyKey = "k"
	type result struct {
		sub     contracts.Submission
		created bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		sub, created, err := creator.CreateSubmission(ctx, first)
		done <- result{sub, created, err}
	}()
	select {
	case <-held:
	case r := <-done:
		t.Fatalf("the creator finished without writing its pointer: %+v", r)
	}
	dup := newSub(p+"-2", p+"-sess", contracts.PhaseAccepted, t0)
	dup.IdempotencyKey = "k"
	got, created, err := e.store(t, Options{}).CreateSubmission(ctx, dup)
	if err != nil || created || got.ID != first.ID {
		t.Fatalf("duplicate = %s created %v, %v; want the first, completed, not created", got.ID, created, err)
	}
	close(release)
	r := <-done
	if r.err != nil || !r.created || r.sub.ID != first.ID {
		t.Fatalf("creator = %s created %v, %v; want created=true (exactly one caller creates)", r.sub.ID, r.created, r.err)
	}
}

// TestConformanceWithLostAnswers runs the store suites with the first
// answer of every write lost (in turn dropped, reset and replaced by a
// 500): every DynamoDB PutItem and UpdateItem and every S3 PutObject the
// adapter makes, so each SDK call is applied once, retried, and its retry
// meets its own effect.
func TestConformanceWithLostAnswers(t *testing.T) {
	e := env(t)
	writes := faultproxy.Any(faultproxy.Ops(faultproxy.DynamoWrites...), faultproxy.Ops(faultproxy.S3Writes...))
	for _, tc := range []struct {
		name string
		opts Options
	}{{"Default", Options{}}, {"SmallClaimCheck", Options{ClaimCheckBytes: 1}}} {
		t.Run(tc.name, func(t *testing.T) {
			rule := faultproxy.FirstAttempt(writes, faultproxy.Drop, faultproxy.Reset, faultproxy.ServerError)
			s, px := e.faulty(t, tc.opts, rule, 0)
			journaltest.Run(t, func(*testing.T) contracts.JournalStore { return s })
			storetest.RunTranscript(t, func(*testing.T) contracts.TranscriptStore { return s })
			storetest.RunStream(t, func(*testing.T) contracts.StreamStore { return s })
			storetest.RunEvents(t, func(*testing.T) contracts.EventLog { return s })
			workflowtest.Run(t, func(*testing.T) contracts.WorkflowStore { return s.Workflows() })
			checkRetried(t, px, condFailed)
			faults, met := len(px.Faults()), 0
			for _, r := range px.Retries() {
				if r.ErrorType == condFailed {
					met++
				}
			}
			t.Logf("%d answers lost; %d retries met their own write's condition failure; by operation:\n%s",
				faults, met, strings.TrimRight(px.Summary(), "\n"))
		})
	}
}
