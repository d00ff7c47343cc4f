package turn_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/testkit/spantest"
	"github.com/cairnrun/cairn/shared/turn"
)

// ofTurn is the spans of the trace whose accept span is sub's.
func ofTurn(t *testing.T, exp *tracetest.InMemoryExporter, subID string) (accept tracetest.SpanStub, spans []tracetest.SpanStub) {
	t.Helper()
	all := exp.GetSpans()
	var tid trace.TraceID
	for _, s := range all {
		if v, ok := spantest.Attr(s, "cairn.submission_id"); ok && v.AsString() == subID && s.Name == "cairn.phase model" {
			tid = s.SpanContext.TraceID()
			break
		}
	}
	for _, s := range all {
		if s.SpanContext.TraceID() == tid {
			spans = append(spans, s)
			if s.Name == "cairn.accept" {
				accept = s
			}
		}
	}
	if !tid.IsValid() || !accept.SpanContext.IsValid() {
		t.Fatalf("no trace with an accept span for %s among %d spans", subID, len(all))
	}
	return accept, spans
}

// TestTurnIsOneTrace: a turn is one trace from accept to commit, every
// phase span the child of the span that sent its message (across the
// queue), the model and tool spans under their phase with their
// attributes; and no span of the turn lands in another trace.
func TestTurnIsOneTrace(t *testing.T) {
	exp := spantest.Record(t)
	h := enginetest.New(t)
	sub := h.Accept("scripted:demo")
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	accept, spans := ofTurn(t, exp, sub.ID)
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	var phases []string
	for _, s := range spans {
		switch {
		case s.Name == "cairn.phase model" || s.Name == "cairn.phase tools" || s.Name == "cairn.phase commit":
			phases = append(phases, s.Name)
			parent, ok := byID[s.Parent.SpanID()]
			if !ok || (parent.Name != "cairn.accept" && parent.Name[:len("cairn.phase")] != "cairn.phase") {
				t.Errorf("%s (step %v) has parent %q, want the accept span or the phase that sent it", s.Name, s.Attributes, parent.Name)
			}
			if s.Parent.IsRemote() == false {
				t.Errorf("%s: its parent came through the queue, not from the context", s.Name)
			}
			for _, k := range []string{"cairn.session_id", "cairn.submission_id", "cairn.step", "cairn.phase", "cairn.principal"} {
				if _, ok := spantest.Attr(s, k); !ok {
					t.Errorf("%s lacks %s: %v", s.Name, k, s.Attributes)
				}
			}
			if a, ok := spantest.Attr(s, "cairn.attempt"); !ok || (s.Name != "cairn.phase commit" && a.AsInt64() < 1) {
				t.Errorf("%s: attempt %v, want the run's attempt (≥ 1 once leased)", s.Name, a.Emit())
			}
		case len(s.Name) > len("cairn.model ") && s.Name[:len("cairn.model ")] == "cairn.model ":
			if p := byID[s.Parent.SpanID()]; p.Name != "cairn.phase model" {
				t.Errorf("model span under %q", p.Name)
			}
			for _, k := range []string{"gen_ai.system", "gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "cairn.step"} {
				if _, ok := spantest.Attr(s, k); !ok {
					t.Errorf("model span lacks %s: %v", k, s.Attributes)
				}
			}
		case len(s.Name) > len("cairn.tool ") && s.Name[:len("cairn.tool ")] == "cairn.tool ":
			// under the tools phase, or a read-only call under the model
			// phase that ran it itself (fuse.go)
			effect, _ := spantest.Attr(s, "cairn.tool.effect")
			if p := byID[s.Parent.SpanID()]; p.Name != "cairn.phase tools" && (p.Name != "cairn.phase model" || effect.AsString() != string(contracts.ReadOnly)) {
				t.Errorf("%s tool span under %q", effect.AsString(), p.Name)
			}
			for _, k := range []string{"cairn.tool.name", "cairn.tool.effect", "cairn.effect_id", "cairn.tool.is_error", "cairn.sandbox.kind"} {
				if _, ok := spantest.Attr(s, k); !ok {
					t.Errorf("tool span %s lacks %s: %v", s.Name, k, s.Attributes)
				}
			}
		}
	}
	slices.Sort(phases)
	// (the commit is part of the last model phase's write, and the step
	// that lists the workspace and reads the note runs its read-only calls
	// in its model phase: the embedded store batches)
	want := []string{"cairn.phase model", "cairn.phase model", "cairn.phase model", "cairn.phase model",
		"cairn.phase tools", "cairn.phase tools"}
	if !slices.Equal(phases, want) {
		t.Fatalf("phase spans %v, want %v", phases, want)
	}
	if accept.Parent.IsValid() {
		t.Errorf("the accept span has a parent: %v", accept.Parent)
	}
	// The demo's four tool calls, in the same trace.
	n := 0
	for _, s := range spans {
		if len(s.Name) > 11 && s.Name[:11] == "cairn.tool " {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d tool spans in the turn's trace, want 4", n)
	}
	// The demo's bash call reports its exit status.
	exits := 0
	for _, s := range spans {
		if s.Name == "cairn.tool bash" {
			if v, ok := spantest.Attr(s, "cairn.tool.exit_code"); ok && v.AsInt64() == 0 {
				exits++
			}
		}
	}
	if exits == 0 {
		t.Errorf("no bash span with its exit code: %v", names(spans))
	}
}

// TestRepairJoinsTheTurnsTrace: a turn whose message was lost is re-driven
// by repair, and the re-drive — and the phases after it — are in the
// turn's trace, under a repair span.
func TestRepairJoinsTheTurnsTrace(t *testing.T) {
	exp := spantest.Record(t)
	h := enginetest.New(t)
	sub := h.Accept("scripted:plain")
	if n := h.Lose(contracts.QueueModel); n != 1 {
		t.Fatalf("lost %d messages", n)
	}
	h.Clock.Advance(turn.DefaultLeaseTTL + time.Minute) // past the stuck threshold, inside the wall limit
	h.Repair()
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	_, spans := ofTurn(t, exp, sub.ID)
	var repair tracetest.SpanStub
	for _, s := range spans {
		if len(s.Name) > 13 && s.Name[:13] == "cairn.repair " {
			repair = s
		}
	}
	if !repair.SpanContext.IsValid() {
		t.Fatalf("no repair span in the turn's trace: %v", names(spans))
	}
	found := false
	for _, s := range spans {
		if s.Name == "cairn.phase model" && s.Parent.SpanID() == repair.SpanContext.SpanID() {
			found = true
		}
	}
	if !found {
		t.Fatalf("no model phase under the repair span: %v", names(spans))
	}
}

func names(spans []tracetest.SpanStub) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestCommandsGetTheirCallsTrace: a sandboxed command gets TRACEPARENT,
// naming its tool call's span in the turn's trace.
func TestCommandsGetTheirCallsTrace(t *testing.T) {
	exp := spantest.Record(t)
	h := enginetest.New(t)
	sess := h.Session(contracts.SessionSpec{Model: "scripted:shell"})
	sub := h.Submit(sess.ID, `printf 'tp=%s' "$TRACEPARENT"`)
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	_, spans := ofTurn(t, exp, sub.ID)
	var tool tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "cairn.tool bash" {
			tool = s
		}
	}
	if !tool.SpanContext.IsValid() {
		t.Fatalf("no bash span: %v", names(spans))
	}
	want := "tp=00-" + tool.SpanContext.TraceID().String() + "-" + tool.SpanContext.SpanID().String() + "-01"
	tr := h.Transcript(sess.ID)
	if !slices.ContainsFunc(tr, func(l string) bool { return strings.Contains(l, want) }) {
		t.Fatalf("the command did not see %s:\n%s", want, strings.Join(tr, "\n"))
	}
}

// TestContentOnlyWhenTheOperatorOptsIn: by default no span carries a
// prompt, an answer or a tool's text; with the GenAI opt-in variable the
// model span carries its last input and its output, the tool span its
// input and result.
func TestContentOnlyWhenTheOperatorOptsIn(t *testing.T) {
	for _, optIn := range []bool{false, true} {
		env := map[string]string{}
		if optIn {
			env[telemetry.EnvCaptureContent] = "SPAN_ONLY"
		}
		if _, err := telemetry.Setup(context.Background(), func(k string) string { return env[k] }, "test"); err != nil {
			t.Fatal(err)
		}
		exp := spantest.Record(t)
		h := enginetest.New(t)
		const prompt = "a prompt no attribute may carry 7f3a"
		sub := h.Submit(h.Session(contracts.SessionSpec{Model: "scripted:demo"}).ID, prompt)
		h.Drain()
		got := h.Get(sub.ID)
		_, spans := ofTurn(t, exp, sub.ID)
		var output, toolInputs, inputs int
		for _, s := range spans {
			if v, ok := spantest.Attr(s, "gen_ai.output.messages"); ok && v.AsString() == got.Result {
				output++
			}
			if _, ok := spantest.Attr(s, "cairn.tool.input"); ok {
				toolInputs++
			}
			if v, ok := spantest.Attr(s, "gen_ai.input.messages"); ok && strings.Contains(v.AsString(), prompt) {
				inputs++
			}
			for _, kv := range s.Attributes {
				if !optIn && (strings.Contains(kv.Value.Emit(), got.Result) || strings.Contains(kv.Value.Emit(), prompt)) {
					t.Errorf("without the opt-in, %s carries text in %s", s.Name, kv.Key)
				}
			}
		}
		if optIn && (output != 1 || toolInputs != 4 || inputs != 1) {
			t.Errorf("with the opt-in: %d model spans with the answer (want 1), %d with the prompt (want 1), %d tool spans with their input (want 4)", output, inputs, toolInputs)
		}
		if !optIn && (output != 0 || toolInputs != 0) {
			t.Errorf("without the opt-in: %d, %d content attributes", output, toolInputs)
		}
	}
	if _, err := telemetry.Setup(context.Background(), func(string) string { return "" }, "test"); err != nil {
		t.Fatal(err)
	}
}
