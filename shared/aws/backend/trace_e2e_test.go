package backend_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/repair"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/testkit/spantest"
)

// tracedStack is the serverless shape on the endpoint with an in-memory
// span exporter installed as the global tracer provider, a manual clock
// (repair acts only when the test moves it) and a tools function that
// loses the first message it is given while lose is set.
type tracedStack struct {
	*stack
	exp   *tracetest.InMemoryExporter
	clock *enginetest.ManualClock
	lose  atomic.Bool
}

func newTracedStack(t *testing.T) *tracedStack {
	t.Helper()
	exp := spantest.Record(t)
	ts := &tracedStack{exp: exp, clock: enginetest.NewClock(time.Now())}
	// Visibility and leases of 30 s: no redelivery on a slow machine.
	ts.stack = newStack(t, 30*time.Second, 5, nil)
	cfg := ts.cfg
	cfg.Clock = ts.clock
	rt, err := backend.New(awstest.Context(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.rt, ts.cfg, ts.api = rt, cfg, lambdafn.APIHandler(rt.API)
	for i, fn := range ts.harness.Functions {
		h := lambdafn.SQSHandler(fn.Queue, rt.Engine.Handle, nil)
		if fn.Queue == contracts.QueueTools {
			h = func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				if ts.lose.CompareAndSwap(true, false) {
					return events.SQSEventResponse{}, nil // acknowledged, never handled: the message is gone
				}
				return lambdafn.SQSHandler(contracts.QueueTools, rt.Engine.Handle, nil)(ctx, ev)
			}
		}
		ts.harness.Functions[i].Handler = h
	}
	return ts
}

// turn submits prompt to a new session of model through the api function.
func (s *tracedStack) turn(model, prompt string) (sid, sub string) {
	s.t.Helper()
	code, sess := s.call("POST", "/v1/sessions", contracts.SessionSpec{Model: model}, nil)
	if code != http.StatusCreated {
		s.t.Fatalf("create session: %d %v", code, sess)
	}
	sid = sess["id"].(string)
	code, su := s.call("POST", "/v1/sessions/"+sid+"/submissions", map[string]string{"prompt": prompt}, nil)
	if code != http.StatusAccepted {
		s.t.Fatalf("submit: %d %v", code, su)
	}
	return sid, su["id"].(string)
}

// settle delivers every queue's messages until the submission ends. A
// sweep that finds no message anywhere means nothing is in flight (the
// harness deletes what it handled before it returns): then, if repair is
// allowed, the clock moves past the lease and the stuck threshold and one
// repair pass runs; a repair that re-drives nothing, or a second need for
// one, fails the test.
func (s *tracedStack) settle(sub string, repairs int) contracts.Submission {
	s.t.Helper()
	ctx := context.Background()
	for range 200 {
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
		if n > 0 {
			continue
		}
		if repairs == 0 {
			s.t.Fatalf("submission %s stuck in %s step %d with no message anywhere", sub, got.Phase, got.Step)
		}
		repairs--
		s.clock.Advance(s.cfg.LeaseTTL + repair.DefaultStuckAfter + time.Minute)
		rep, err := s.rt.Repair.Run(ctx)
		if err != nil || rep.Redriven != 1 {
			s.t.Fatalf("repair pass %+v (%v), want the stuck turn re-driven", rep, err)
		}
	}
	s.t.Fatalf("submission %s not terminal after 200 sweeps", sub)
	return contracts.Submission{}
}

func spanAttr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// turnSpans is every exported span naming the session or submission, all
// of which must share one trace, and that trace's spans by id.
func (s *tracedStack) turnSpans(sid, sub string) (all []tracetest.SpanStub, byID map[trace.SpanID]tracetest.SpanStub) {
	s.t.Helper()
	traces := map[trace.TraceID]bool{}
	for _, sp := range s.exp.GetSpans() {
		v1, _ := spanAttr(sp, "cairn.session_id")
		v2, _ := spanAttr(sp, "cairn.submission_id")
		if v1.AsString() == sid || v2.AsString() == sub {
			traces[sp.SpanContext.TraceID()] = true
		}
	}
	if len(traces) != 1 {
		s.t.Fatalf("the turn's spans are in %d traces, want exactly one", len(traces))
	}
	byID = map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range s.exp.GetSpans() {
		if traces[sp.SpanContext.TraceID()] {
			all = append(all, sp)
			byID[sp.SpanContext.SpanID()] = sp
		}
	}
	return all, byID
}

// phase is the one span named name whose cairn.step is step.
func phase(t *testing.T, spans []tracetest.SpanStub, name string, step int) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if v, _ := spanAttr(s, "cairn.step"); s.Name == name && v.AsInt64() == int64(step) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q at step %d, want 1; spans: %v", len(found), name, step, spanNames(spans))
	}
	return found[0]
}

func spanNames(spans []tracetest.SpanStub) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// under checks that child's parent is parent, through a queue (remote)
// when remote is set.
func under(t *testing.T, child, parent tracetest.SpanStub, remote bool) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() || child.Parent.IsRemote() != remote {
		t.Errorf("%s's parent is %v (remote %v), want %s (remote %v)", child.Name, child.Parent.SpanID(), child.Parent.IsRemote(), parent.Name, remote)
	}
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := spanAttr(s, k); !ok {
			t.Errorf("%s lacks %s: %v", s.Name, k, s.Attributes)
		}
	}
}

// TestTurnTraceOnTheServerlessShape: a turn with one tool call, driven
// through the api and the phase functions on SQS with its journal on
// DynamoDB, is exactly one trace: accept → model → tools → model (which
// commits the final answer itself: no commit hop, no commit phase span),
// each phase span the remote child of the span that enqueued it across the
// SQS hop; the model and tool spans under their phases with their
// attributes, the sandbox operations under the tool call; no prompt or
// output text as an attribute. A turn whose tools message was lost is
// re-driven by repair, and the re-drive and the phases after it are in
// that turn's trace.
func TestTurnTraceOnTheServerlessShape(t *testing.T) {
	s := newTracedStack(t)
	const prompt = "echo traced-output-7f3a"
	sid, sub := s.turn("scripted:shell", prompt)
	if got := s.settle(sub, 0); got.Phase != contracts.PhaseCommitted || got.Step != 1 {
		t.Fatalf("%s step %d: %s", got.Phase, got.Step, got.Error)
	}
	spans, byID := s.turnSpans(sid, sub)
	var accept tracetest.SpanStub
	for _, sp := range spans {
		if sp.Name == "cairn.accept" {
			accept = sp
		}
		for _, kv := range sp.Attributes {
			if v := kv.Value.Emit(); strings.Contains(v, "traced-output-7f3a") {
				t.Errorf("%s carries prompt or output text in %s", sp.Name, kv.Key)
			}
		}
	}
	if !accept.SpanContext.IsValid() || accept.Parent.IsValid() {
		t.Fatalf("no root accept span in the turn's trace: %v", spanNames(spans))
	}
	model0, tools0 := phase(t, spans, "cairn.phase model", 0), phase(t, spans, "cairn.phase tools", 0)
	model1 := phase(t, spans, "cairn.phase model", 1)
	under(t, model0, accept, true)
	under(t, tools0, model0, true)
	under(t, model1, tools0, true)
	noCommitHop(t, spans)

	var models []tracetest.SpanStub
	var tool, exec, acquire tracetest.SpanStub
	for _, sp := range spans {
		switch {
		case strings.HasPrefix(sp.Name, "cairn.model "):
			models = append(models, sp)
		case sp.Name == "cairn.tool bash":
			tool = sp
		case sp.Name == "cairn.sandbox exec":
			exec = sp
		case sp.Name == "cairn.sandbox acquire":
			acquire = sp
		}
	}
	if len(models) != 2 {
		t.Fatalf("%d model spans, want 2: %v", len(models), spanNames(spans))
	}
	for _, m := range models {
		if p := byID[m.Parent.SpanID()]; p.Name != "cairn.phase model" {
			t.Errorf("model span under %q", p.Name)
		}
		wantAttrs(t, m, "gen_ai.system", "gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
		if v, _ := spanAttr(m, "gen_ai.system"); v.AsString() != "scripted" {
			t.Errorf("model span provider %q", v.AsString())
		}
	}
	if !tool.SpanContext.IsValid() || !exec.SpanContext.IsValid() || !acquire.SpanContext.IsValid() {
		t.Fatalf("tool, sandbox exec or acquire span missing: %v", spanNames(spans))
	}
	under(t, tool, tools0, false)
	under(t, acquire, tools0, false)
	under(t, exec, tool, false)
	wantAttrs(t, tool, "cairn.tool.name", "cairn.tool.effect", "cairn.effect_id", "cairn.tool.is_error")
	// The sandbox's kind and the command's exit status are on the sandbox
	// span (the tool span does not carry them), under the same effect id.
	effect, _ := spanAttr(tool, "cairn.effect_id")
	if v, _ := spanAttr(exec, "cairn.effect_id"); v.AsString() != effect.AsString() || effect.AsString() == "" {
		t.Errorf("sandbox exec effect id %q, tool's %q", v.AsString(), effect.AsString())
	}
	if v, _ := spanAttr(exec, "cairn.sandbox.kind"); v.AsString() != "local" {
		t.Errorf("sandbox kind %q, want local (no Fargate settings)", v.AsString())
	}
	if v, ok := spanAttr(exec, "cairn.sandbox.exit_code"); !ok || v.AsInt64() != 0 {
		t.Errorf("sandbox exit code %v (%v), want 0", v.Emit(), ok)
	}

	// A crash-and-repair turn: its tools message is lost (acknowledged,
	// never handled); repair re-drives it in the turn's own trace.
	s.lose.Store(true)
	sid2, sub2 := s.turn("scripted:shell", "echo again")
	if got := s.settle(sub2, 1); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("repaired turn %s: %s", got.Phase, got.Error)
	}
	if s.lose.Load() {
		t.Fatal("no tools message was lost")
	}
	spans2, _ := s.turnSpans(sid2, sub2)
	var accept2, rep tracetest.SpanStub
	for _, sp := range spans2 {
		switch {
		case sp.Name == "cairn.accept":
			accept2 = sp
		case strings.HasPrefix(sp.Name, "cairn.repair "):
			rep = sp
		}
	}
	if !rep.SpanContext.IsValid() {
		t.Fatalf("no repair span in the repaired turn's trace: %v", spanNames(spans2))
	}
	under(t, rep, accept2, true)
	redriven := phase(t, spans2, "cairn.phase tools", 0)
	under(t, redriven, rep, true)
	under(t, phase(t, spans2, "cairn.phase model", 1), redriven, true)
	noCommitHop(t, spans2)
}

// noCommitHop fails unless spans hold no commit phase: the final answer's
// model phase commits it (turn.commitFinal).
func noCommitHop(t *testing.T, spans []tracetest.SpanStub) {
	t.Helper()
	for _, sp := range spans {
		if sp.Name == "cairn.phase commit" {
			t.Errorf("a commit phase span: the model phase commits a final answer itself, no hop: %v", spanNames(spans))
			return
		}
	}
}
