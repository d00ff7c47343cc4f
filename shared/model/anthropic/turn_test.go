package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// These tests run the client through the real engine (enginetest.ModelTurn) against
// the fake server, and assert what a user sees: transcript, usage, journal.

func TestTurnPlainText(t *testing.T) {
	f := newFake(t, func(_ int, _ request, w http.ResponseWriter) {
		stream(w, textAnswer(12, 9, "Hello", ", wor", "ld! How can", " I help?")...)
	})
	res := enginetest.ModelTurn(t, f.client(), "claude-test", "hi")

	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 0 {
		t.Fatalf("phase %s (%s) after %d failures", res.Sub.Phase, res.Sub.Error, res.Failures)
	}
	want := []string{"user: text=hi", "assistant: text=Hello, world! How can I help?"}
	if !reflect.DeepEqual(res.Transcript, want) {
		t.Fatalf("transcript %q, want %q", res.Transcript, want)
	}
	if res.Sub.Usage != (contracts.Usage{InputTokens: 12, OutputTokens: 9}) {
		t.Fatalf("usage %+v, want the SSE usage 12/9", res.Sub.Usage)
	}
	if res.Sub.Result != "Hello, world! How can I help?" {
		t.Fatalf("result %q", res.Sub.Result)
	}
	// The stream's text is its text_delta events (one flush here: the
	// manual clock never passes FlushEvery); what is not text, the usage,
	// is in the completion, not stored again as a chunk of its tail.
	st, err := res.Harness.Store.GetStream(context.Background(), res.Sub.StreamKey)
	if err != nil || st.Done == nil {
		t.Fatalf("stream %s: %v (done %v)", res.Sub.StreamKey, err, st.Done)
	}
	var kinds []string
	for _, c := range st.Chunks {
		kinds = append(kinds, string(c.Type)+":"+c.Text)
	}
	if len(kinds) != 0 || st.Done.Usage != res.Sub.Usage {
		t.Fatalf("chunks %q, completion usage %+v: want no chunk, the usage in the completion", kinds, st.Done.Usage)
	}
	text := ""
	for _, ev := range res.Events {
		if ev.Type == contracts.EventTextDelta {
			text += ev.Text
		}
	}
	if text != "Hello, world! How can I help?" {
		t.Fatalf("text_delta events say %q", text)
	}
	if st.Done.StopReason != "end_turn" {
		t.Fatalf("stop reason %q", st.Done.StopReason)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if last := res.Events[len(res.Events)-1]; last.Type != contracts.EventCommitted {
		t.Fatalf("last event %+v, want committed", last)
	}
}

// withSystem gives every request a system prompt, as a session spec would.
type withSystem struct {
	*Client
	system string
}

func (w withSystem) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	req.System = w.system
	return w.Client.Stream(ctx, req, emit)
}

func TestTurnToolCallsSplitMidToken(t *testing.T) {
	f := newFake(t, func(_ int, r request, w http.ResponseWriter) {
		if r.lastHasToolResults() {
			stream(w, textAnswer(80, 7, "The note says: ", "buy milk")...)
			return
		}
		stream(w,
			messageStart("msg_tools", 50), textStart(0), textDelta(0, "I'll save the note, "), textDelta(0, "then read it back."), blockStop(0),
			toolStart(1, "toolu_01", "write_file"), jsonDelta(1, ""), jsonDelta(1, `{"pa`), jsonDelta(1, `th": "no`),
			ping(), jsonDelta(1, `tes.txt", "con`), jsonDelta(1, `tent": "buy mi`), jsonDelta(1, `lk"}`), blockStop(1),
			toolStart(2, "toolu_02", "read_file"), jsonDelta(2, `{"path"`), jsonDelta(2, `: "notes.txt"`), jsonDelta(2, `}`), blockStop(2),
			messageDelta("tool_use", 40), messageStop())
	})
	res := enginetest.ModelTurn(t, withSystem{f.client(), "You are terse."}, "claude-test", "Save a note")

	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 0 {
		t.Fatalf("phase %s (%s) after %d failures", res.Sub.Phase, res.Sub.Error, res.Failures)
	}
	want := []string{
		"user: text=Save a note",
		`assistant: text=I'll save the note, then read it back. use=write_file{"path":"notes.txt","content":"buy milk"} use=read_file{"path":"notes.txt"}`,
		"tool: result=wrote 8 bytes to notes.txt result=buy milk",
		"assistant: text=The note says: buy milk",
	}
	if !reflect.DeepEqual(res.Transcript, want) {
		t.Fatalf("transcript\n%s\nwant\n%s", strings.Join(res.Transcript, "\n"), strings.Join(want, "\n"))
	}
	if got := res.Harness.File(res.Sub.SessionID, "notes.txt"); got != "buy milk" {
		t.Fatalf("notes.txt = %q", got)
	}
	if res.Sub.Usage != (contracts.Usage{InputTokens: 130, OutputTokens: 47}) {
		t.Fatalf("usage %+v, want the sum of both steps 130/47", res.Sub.Usage)
	}

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first := reqs[0]
	if got := first.Header.Get("X-Api-Key"); got != testKey {
		t.Fatalf("x-api-key %q", got)
	}
	if first.Header.Get("Anthropic-Version") == "" {
		t.Fatal("no anthropic-version header")
	}
	b := first.Body
	if b["stream"] != true || b["model"] != "claude-test" || b["max_tokens"] != float64(DefaultMaxTokens) {
		t.Fatalf("stream %v model %v max_tokens %v", b["stream"], b["model"], b["max_tokens"])
	}
	if sys := objects(b["system"]); len(sys) != 1 || sys[0]["text"] != "You are terse." {
		t.Fatalf("system %v", b["system"])
	}
	tools := map[string]map[string]any{}
	for _, tl := range objects(b["tools"]) {
		schema, _ := tl["input_schema"].(map[string]any)
		tools[tl["name"].(string)] = schema
	}
	for _, name := range []string{"write_file", "read_file"} {
		s := tools[name]
		props, _ := s["properties"].(map[string]any)
		if s["type"] != "object" || props["path"] == nil || s["required"] == nil || s["additionalProperties"] != false {
			t.Fatalf("tool %s input_schema %v", name, s)
		}
	}

	msgs := reqs[1].messages()
	if len(msgs) != 3 || msgs[1]["role"] != "assistant" || msgs[2]["role"] != "user" {
		t.Fatalf("second request messages %v", msgs)
	}
	var uses []string
	for _, c := range objects(msgs[1]["content"]) {
		if c["type"] == "tool_use" {
			in, _ := json.Marshal(c["input"])
			uses = append(uses, c["id"].(string)+" "+c["name"].(string)+string(in))
		}
	}
	if want := []string{`toolu_01 write_file{"content":"buy milk","path":"notes.txt"}`, `toolu_02 read_file{"path":"notes.txt"}`}; !reflect.DeepEqual(uses, want) {
		t.Fatalf("tool_use blocks sent back %q, want %q", uses, want)
	}
	var results []string
	for _, c := range objects(msgs[2]["content"]) {
		content := objects(c["content"])
		if c["type"] != "tool_result" || len(content) != 1 {
			t.Fatalf("tool result block %v", c)
		}
		results = append(results, c["tool_use_id"].(string)+"="+content[0]["text"].(string))
	}
	if want := []string{"toolu_01=wrote 8 bytes to notes.txt", "toolu_02=buy milk"}; !reflect.DeepEqual(results, want) {
		t.Fatalf("tool_result blocks %q, want %q", results, want)
	}
}

func TestTurnThrottledHonoursRetryAfter(t *testing.T) {
	f := newFake(t, func(n int, _ request, w http.ResponseWriter) {
		if n == 0 {
			apiError(w, http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", "retry-after", "2")
			return
		}
		stream(w, textAnswer(10, 3, "Fine, ", "thanks.")...)
	})
	res := enginetest.ModelTurn(t, f.client(), "claude-test", "how are you?")

	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 0 {
		t.Fatalf("phase %s (%s) after %d failures", res.Sub.Phase, res.Sub.Error, res.Failures)
	}
	if waits := f.recorded(); len(waits) != 1 || waits[0] < 2*time.Second {
		t.Fatalf("waits %v, want one of at least the 2s Retry-After", waits)
	}
	if n := len(f.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if res.Transcript[1] != "assistant: text=Fine, thanks." || res.Sub.Usage != (contracts.Usage{InputTokens: 10, OutputTokens: 3}) {
		t.Fatalf("transcript %q usage %+v", res.Transcript, res.Sub.Usage)
	}
}

func TestTurnResumesACutStream(t *testing.T) {
	half := []string{messageStart("msg_cut", 20), textStart(0), textDelta(0, "The answer "), textDelta(0, "is")}
	for _, tc := range []struct {
		name string
		cut  func(w http.ResponseWriter, evs ...string)
	}{
		{"connection reset mid-chunk", cutChunked},
		{"clean end before message_stop", cutClean},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(n int, _ request, w http.ResponseWriter) {
				if n == 0 {
					tc.cut(w, half...)
					return
				}
				stream(w, textAnswer(20, 6, "The answer ", "is ", "42.")...)
			})
			res := enginetest.ModelTurn(t, f.client(), "claude-test", "what is the answer?")

			if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 1 {
				t.Fatalf("phase %s (%s) after %d failures, want COMMITTED after 1", res.Sub.Phase, res.Sub.Error, res.Failures)
			}
			if n := len(f.requests()); n != 2 {
				t.Fatalf("%d requests, want 2", n)
			}
			if waits := f.recorded(); len(waits) != 0 {
				t.Fatalf("waits %v: a stream broken after output is not retried in place", waits)
			}
			want := []string{"user: text=what is the answer?", "assistant: text=The answer is 42."}
			if !reflect.DeepEqual(res.Transcript, want) {
				t.Fatalf("transcript %q, want %q", res.Transcript, want)
			}
			if res.Sub.Usage != (contracts.Usage{InputTokens: 20, OutputTokens: 6}) {
				t.Fatalf("usage %+v: only the complete attempt counts", res.Sub.Usage)
			}
		})
	}
}
