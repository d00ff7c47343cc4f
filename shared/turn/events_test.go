package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

// partial emits a flushed batch of text (FlushChunks chunks: the manual
// clock never moves, so only the count flushes), then err.
func partial(emit func(contracts.ModelEvent) error, err error) (contracts.ModelResponse, error) {
	for range turn.FlushChunks {
		_ = emit(contracts.ModelEvent{Type: contracts.ModelText, Text: "half an ans "})
	}
	return contracts.ModelResponse{}, err
}

// hasText reports whether a text_delta of step carries s.
func hasText(evs []contracts.Event, step int, s string) bool {
	for _, ev := range evs {
		if ev.Type == contracts.EventTextDelta && ev.Step == step && strings.Contains(ev.Text, s) {
			return true
		}
	}
	return false
}

// cutAfterOutput breaks its first stream after some text, as a crash or a
// reset connection would, then plays the scripted model.
type cutAfterOutput struct {
	inner *scripted.Client
	cut   bool
}

func (c *cutAfterOutput) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	if !c.cut {
		c.cut = true
		return partial(emit, errors.New("connection reset"))
	}
	return c.inner.Stream(ctx, req, emit)
}

// finalText is what a follower shows for step: the text of the step's
// attempts that no stream_discarded event voids, wherever it comes.
func finalText(evs []contracts.Event, step int) string {
	void := map[int]bool{}
	for _, ev := range evs {
		if ev.Type == contracts.EventStreamDiscarded && ev.Step == step {
			void[ev.Attempt] = true
		}
	}
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == contracts.EventTextDelta && ev.Step == step && !void[ev.Attempt] {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// A stream broken after output: its attempt is marked discarded before the
// next attempt's text, so the step's text is the committed answer, once.
func TestBrokenStreamAttemptIsDiscarded(t *testing.T) {
	res := enginetest.ModelTurn(t, &cutAfterOutput{inner: scripted.New()}, "plain", "hi")
	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 1 {
		t.Fatalf("phase %s after %d failures", res.Sub.Phase, res.Failures)
	}
	if !hasText(res.Events, 0, "half an ans") {
		t.Fatal("the broken attempt's text never reached the event log: the test tests nothing")
	}
	discarded, firstNew := -1, -1
	for i, ev := range res.Events {
		switch {
		case ev.Type == contracts.EventStreamDiscarded:
			if ev.Step != 0 || ev.Attempt != 1 || discarded >= 0 {
				t.Fatalf("unexpected discard event %+v", ev)
			}
			// the timeline says who took the step over: attempt 2, and whose lease
			if !strings.Contains(ev.Text, "attempt 2 replaces it, under the lease of ") || strings.HasSuffix(ev.Text, "lease of ") {
				t.Fatalf("discard event text %q names neither the new attempt nor its lease holder", ev.Text)
			}
			discarded = i
		case ev.Type == contracts.EventStep:
			if ev.Attempt != 1 || !strings.HasPrefix(ev.Text, "attempt 1 under the lease of ") {
				t.Fatalf("step event %+v: want attempt 1 and its lease holder", ev)
			}
		case ev.Type == contracts.EventTextDelta && ev.Attempt != 1 && firstNew < 0:
			firstNew = i
		}
	}
	if discarded < 0 || firstNew < 0 || discarded > firstNew {
		var seen []string
		for _, ev := range res.Events {
			seen = append(seen, fmt.Sprintf("%s(step %d, attempt %d)", ev.Type, ev.Step, ev.Attempt))
		}
		t.Fatalf("attempt 1 not discarded before attempt 2 streamed (discard at %d, attempt 2 at %d): %s", discarded, firstNew, strings.Join(seen, ", "))
	}
	if got := finalText(res.Events, 0); got != res.Sub.Result {
		t.Fatalf("follower text %q, committed %q", got, res.Sub.Result)
	}
}

// A turn that fails mid-stream (a permanent model error after output)
// leaves no step text standing: the incomplete attempt is discarded.
func TestFailedStreamAttemptIsDiscarded(t *testing.T) {
	res := enginetest.ModelTurn(t, failAfterOutput{}, "plain", "hi")
	if res.Sub.Phase != contracts.PhaseFailed || !strings.HasPrefix(res.Sub.Error, "model_error") {
		t.Fatalf("phase %s %s", res.Sub.Phase, res.Sub.Error)
	}
	if !hasText(res.Events, 0, "half an ans") {
		t.Fatal("the failed attempt's text never reached the event log: the test tests nothing")
	}
	if got := finalText(res.Events, 0); got != "" {
		t.Fatalf("the failed attempt's text stands (%d bytes)", len(got))
	}
}

type failAfterOutput struct{}

func (failAfterOutput) Stream(_ context.Context, _ contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	return partial(emit, fmt.Errorf("content filtered: %w", contracts.ErrInvalid))
}

// terminal counts the terminal events of each (step, call) and fails t
// unless every call the turn requested has exactly one; it returns the
// type of each call's terminal event by call id.
func terminal(t *testing.T, h *enginetest.Harness, subID string, calls []string) map[string]string {
	t.Helper()
	evs, err := h.Store.ListEvents(context.Background(), subID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	typ := map[string]string{}
	for _, ev := range evs {
		switch ev.Type {
		case contracts.EventToolFinished, contracts.EventToolDenied, contracts.EventToolInterrupted:
			n[ev.CallID]++
			typ[ev.CallID] = ev.Type
		}
	}
	for _, c := range calls {
		if n[c] != 1 {
			t.Errorf("call %s has %d terminal events, want 1", c, n[c])
		}
	}
	if len(n) != len(calls) {
		t.Errorf("terminal events for calls %v, want %v", n, calls)
	}
	return typ
}

func callIDs(sub contracts.Submission) []string {
	var out []string
	for _, c := range sub.ToolRequests {
		out = append(out, c.ID)
	}
	return out
}

// runModel handles only the model phase of a fresh submission and returns
// the record, in TOOLS.
func runModel(t *testing.T, h *enginetest.Harness, spec contracts.SessionSpec) contracts.Submission {
	t.Helper()
	h.RT.Workers.Chain = nil // only the model phase
	s := h.Session(spec)
	sub := h.Submit(s.ID, "go")
	if _, err := h.RT.Workers.Once(context.Background(), contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	cur := h.Get(sub.ID)
	if cur.Phase != contracts.PhaseTools {
		t.Fatalf("phase %s", cur.Phase)
	}
	return cur
}

func TestEveryToolCallEndsOnce(t *testing.T) {
	ask := func(tool string) contracts.Policy {
		return contracts.Policy{Tools: map[string]contracts.Decision{tool: contracts.Ask}}
	}
	t.Run("interrupted", func(t *testing.T) {
		h := enginetest.New(t)
		cur := runModel(t, h, contracts.SessionSpec{Model: "scripted:approval"})
		if err := h.Store.MarkToolStarted(context.Background(), cur.ID, cur.Step, cur.ToolRequests[0].ID); err != nil {
			t.Fatal(err)
		}
		h.Drain()
		if got := terminal(t, h, cur.ID, callIDs(cur)); got[cur.ToolRequests[0].ID] != contracts.EventToolInterrupted {
			t.Fatalf("terminal event %v, want tool_interrupted", got)
		}
	})
	t.Run("denied by policy", func(t *testing.T) {
		h := enginetest.New(t)
		cur := runModel(t, h, contracts.SessionSpec{Model: "scripted:approval", Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Deny}}})
		h.Drain()
		if got := terminal(t, h, cur.ID, callIDs(cur)); got[cur.ToolRequests[0].ID] != contracts.EventToolDenied {
			t.Fatalf("terminal event %v, want tool_denied", got)
		}
	})
	for _, d := range []contracts.Decision{contracts.Allow, contracts.Deny} {
		t.Run("parked then "+string(d), func(t *testing.T) {
			// write_file, glob and grep run and bash parks; the decision
			// re-runs the tools phase, which must not end a call twice.
			h := enginetest.New(t)
			cur := runModel(t, h, contracts.SessionSpec{Model: "scripted:multi", Policy: ask("bash")})
			h.Drain()
			parked := h.Get(cur.ID)
			if len(parked.Approvals) != 1 {
				t.Fatalf("not parked: %+v", parked)
			}
			bash := parked.Approvals[0].CallID
			if got := terminal(t, h, cur.ID, []string{cur.ToolRequests[0].ID, cur.ToolRequests[1].ID, cur.ToolRequests[3].ID}); got[bash] != "" {
				t.Fatalf("the parked call ended: %v", got)
			}
			if _, err := h.RT.Engine.Decide(context.Background(), cur.SessionID, parked.Approvals[0].ID, d, ""); err != nil {
				t.Fatal(err)
			}
			h.Drain()
			if h.Get(cur.ID).Phase != contracts.PhaseCommitted {
				t.Fatalf("phase %s", h.Get(cur.ID).Phase)
			}
			want := map[contracts.Decision]string{contracts.Allow: contracts.EventToolFinished, contracts.Deny: contracts.EventToolDenied}[d]
			if got := terminal(t, h, cur.ID, callIDs(cur)); got[bash] != want {
				t.Fatalf("bash ended %q, want %q", got[bash], want)
			}
		})
	}
	t.Run("result recorded, event lost", func(t *testing.T) {
		// A process recorded the call's result and died before its event:
		// the re-run keeps the result and writes the event.
		h := enginetest.New(t)
		cur := runModel(t, h, contracts.SessionSpec{Model: "scripted:approval"})
		call := cur.ToolRequests[0]
		if err := h.Store.PutToolResult(context.Background(), cur.ID, cur.Step, contracts.ToolResult{CallID: call.ID, Content: "recorded"}); err != nil {
			t.Fatal(err)
		}
		h.Drain()
		if got := terminal(t, h, cur.ID, callIDs(cur)); got[call.ID] != contracts.EventToolFinished {
			t.Fatalf("terminal event %v", got)
		}
		if h.File(cur.SessionID, "approved.txt") != "" {
			t.Fatal("the recorded call ran again")
		}
	})
	t.Run("turn fails while parked", func(t *testing.T) {
		h := enginetest.New(t)
		cur := runModel(t, h, contracts.SessionSpec{Model: "scripted:approval", Policy: ask("bash")})
		h.Drain()
		parked := h.Get(cur.ID)
		if err := h.RT.Engine.Fail(context.Background(), parked, "cancelled_by_test"); err != nil {
			t.Fatal(err)
		}
		got := terminal(t, h, cur.ID, callIDs(cur))
		if got[cur.ToolRequests[0].ID] != contracts.EventToolInterrupted {
			t.Fatalf("terminal event %v, want tool_interrupted", got)
		}
	})
	t.Run("duplicate delivery", func(t *testing.T) {
		h := enginetest.New(t, func(p *assemble.Ports) { p.Queue = twice{p.Queue} })
		cur := runModel(t, h, contracts.SessionSpec{Model: "scripted:multi"})
		h.Drain()
		terminal(t, h, cur.ID, callIDs(cur))
	})
}

// With Deps.FlushBytes, no text_delta carries more text than it,
// JSON-encoded (the chunk that would take one past it starts the next):
// plain words and text that JSON escapes (code: quotes, newlines, <, &),
// and the events still add up to the answer, in order.
func TestFlushBytesBoundsATextDelta(t *testing.T) {
	const limit = 200
	code := strings.Repeat("if a < b && c > \"d\" {\n\treturn `x`\n}\n", 60)
	for _, tc := range []struct {
		name, model string
		client      contracts.ModelClient
	}{
		{"words", "scripted:bench-2000-80-100", nil},
		{"code", enginetest.ModelProvider + ":code", chunked{text: code, size: 37}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := enginetest.NewConfig(t, assemble.Config{FlushBytes: limit}, func(p *assemble.Ports) {
				if tc.client != nil {
					p.Models[enginetest.ModelProvider] = tc.client
				}
			})
			s := h.Session(contracts.SessionSpec{Model: tc.model, Tools: []contracts.ToolConfig{{Name: "bash"}}})
			sub := h.Submit(s.ID, "go")
			h.Drain()
			got := h.Get(sub.ID)
			if got.Phase != contracts.PhaseCommitted {
				t.Fatalf("%s: %s", got.Phase, got.Error)
			}
			evs, err := h.Store.ListEvents(context.Background(), sub.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			step, deltas, encoded := -1, 0, 0
			for _, ev := range evs {
				if ev.Type == contracts.EventTextDelta {
					step = ev.Step
					deltas++
					n := turn.JSONTextLen(ev.Text)
					encoded += n
					if n > limit {
						t.Errorf("a text_delta of %d bytes JSON-encoded, limit %d", n, limit)
					}
				}
			}
			if deltas < encoded/limit || deltas < 5 {
				t.Errorf("%d text_delta events for %d encoded bytes at most %d each", deltas, encoded, limit)
			}
			if text := finalText(evs, step); text != got.Result || len(text) < 1990 {
				t.Errorf("the events' text (%d bytes) is not the answer (%d bytes)", len(text), len(got.Result))
			}
		})
	}
}

// chunked answers with text in chunks of size bytes.
type chunked struct {
	text string
	size int
}

func (c chunked) Stream(_ context.Context, _ contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	for rest := c.text; rest != ""; {
		n := min(c.size, len(rest))
		if err := emit(contracts.ModelEvent{Type: contracts.ModelText, Text: rest[:n]}); err != nil {
			return contracts.ModelResponse{}, err
		}
		rest = rest[n:]
	}
	return contracts.ModelResponse{Text: c.text, StopReason: "end_turn"}, nil
}

// JSONTextLen is what encoding/json writes inside the quotes.
func TestJSONTextLen(t *testing.T) {
	for _, s := range []string{"", "plain words", "a \"quoted\" \\ path", "line\nnext\r\t\b\f", "\x00\x01\x1f",
		"<a href=\"x\">&amp;</a>", "héllo wörld ✓ 🎉", "bad \xff\xfe utf-8", "\u2028 and \u2029", strings.Repeat("if a < b {\n}", 50)} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := turn.JSONTextLen(s), len(b)-2; got != want {
			t.Errorf("JSONTextLen(%q) = %d, encoding/json writes %d", s, got, want)
		}
	}
}
