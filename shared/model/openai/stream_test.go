package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/openai"
	"github.com/cairnrun/cairn/shared/model/retry"
)

// stream calls c.Stream once and records the events.
func stream(c *openai.Client) (contracts.ModelResponse, []contracts.ModelEvent, error) {
	var evs []contracts.ModelEvent
	resp, err := c.Stream(context.Background(), contracts.ModelRequest{Model: "gpt-test", Messages: []contracts.Node{
		{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "hi"}}},
	}}, func(ev contracts.ModelEvent) error {
		evs = append(evs, ev)
		return nil
	})
	return resp, evs, err
}

// render writes events as comparable lines.
func render(evs []contracts.ModelEvent) []string {
	var out []string
	for _, e := range evs {
		switch e.Type {
		case contracts.ModelText:
			out = append(out, "text "+e.Text)
		case contracts.ModelToolCall:
			out = append(out, "tool "+e.ToolCall.ID+" "+e.ToolCall.Name+" "+string(e.ToolCall.Input))
		case contracts.ModelUsage:
			b, _ := json.Marshal(e.Usage)
			out = append(out, "usage "+string(b))
		}
	}
	return out
}

func TestStreamEvents(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		events []string
		stop   string
	}{
		{name: "text, then each tool call once complete, then usage",
			chunks: []string{role(), text("Let me "), text("check."), toolStart(0, "call_a", "read_file"), toolArgs(0, `{"path":`),
				toolStart(1, "call_b", "glob"), toolArgs(0, `"a.go"}`), toolArgs(1, `{"pattern":"*.go"}`), finish("tool_calls"), usage(30, 12)},
			events: []string{"text Let me ", "text check.", `tool call_a read_file {"path":"a.go"}`, `tool call_b glob {"pattern":"*.go"}`,
				`usage {"input_tokens":30,"output_tokens":12}`},
			stop: "tool_use"},
		{name: "empty arguments become {}",
			chunks: []string{role(), toolStart(0, "call_a", "list_dir"), finish("tool_calls"), usage(3, 1)},
			events: []string{"tool call_a list_dir {}", `usage {"input_tokens":3,"output_tokens":1}`}, stop: "tool_use"},
		{name: "arguments cut by the token limit become a JSON string",
			chunks: []string{role(), toolStart(0, "call_a", "write_file"), toolArgs(0, `{"path":"a.txt","cont`), finish("length")},
			events: []string{`tool call_a write_file "{\"path\":\"a.txt\",\"cont"`}, stop: "max_tokens"},
		{name: "missing ids are made up, a stop after tool calls is tool_use",
			chunks: []string{toolStart(0, "", "list_dir"), toolArgs(0, `{"path":"."}`), finish("stop")},
			events: []string{`tool call_0 list_dir {"path":"."}`}, stop: "tool_use"},
		{name: "a new id at the same index is a new call",
			chunks: []string{toolStart(0, "call_a", "list_dir"), toolArgs(0, `{}`), toolStart(0, "call_b", "glob"), toolArgs(0, `{"pattern":"*"}`), finish("tool_calls")},
			events: []string{"tool call_a list_dir {}", `tool call_b glob {"pattern":"*"}`}, stop: "tool_use"},
		{name: "no usage from the server is zero usage",
			chunks: []string{role(), text("ok"), finish("stop")}, events: []string{"text ok"}, stop: "end_turn"},
		{name: "unknown finish reasons are kept",
			chunks: []string{role(), text("I can"), finish("content_filter"), usage(2, 2)},
			events: []string{"text I can", `usage {"input_tokens":2,"output_tokens":2}`}, stop: "content_filter"},
		{name: "a refusal is the answer",
			chunks: []string{chunk(choice(map[string]any{"refusal": "I can't help with that."}, nil), nil), finish("stop")},
			events: []string{"text I can't help with that."}, stop: "end_turn"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, script(sse(tc.chunks...)))
			resp, evs, err := stream(client(t, f, &sleeps{}))
			if err != nil {
				t.Fatal(err)
			}
			if got := render(evs); !reflect.DeepEqual(got, tc.events) {
				t.Fatalf("events\n%q\nwant\n%q", got, tc.events)
			}
			if resp.StopReason != tc.stop {
				t.Fatalf("stop reason %q, want %q", resp.StopReason, tc.stop)
			}
			var text string
			var calls int
			for _, e := range evs {
				text += e.Text
				if e.ToolCall != nil {
					if !reflect.DeepEqual(resp.ToolCalls[calls], *e.ToolCall) {
						t.Fatalf("response call %d %+v differs from its event %+v", calls, resp.ToolCalls[calls], *e.ToolCall)
					}
					calls++
				}
				if e.Usage != nil && *e.Usage != resp.Usage {
					t.Fatalf("usage %+v, event %+v", resp.Usage, *e.Usage)
				}
			}
			if text != resp.Text || calls != len(resp.ToolCalls) {
				t.Fatalf("response %+v does not match its events", resp)
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	cases := []struct {
		name     string
		reply    reply
		requests int
		want     error  // errors.Is, if set
		text     string // in the error
	}{
		{name: "a stream cut before output is retried", reply: cut(role()), requests: 2, want: io.ErrUnexpectedEOF},
		{name: "a stream without a finish_reason is broken", reply: sse(role(), text("Hal")), requests: 1, want: io.ErrUnexpectedEOF},
		{name: "a stream of nothing is retried", reply: sse(), requests: 2, want: io.ErrUnexpectedEOF},
		{name: "retry-after-ms is honoured", reply: status(503, `{"error":{"message":"overloaded"}}`, "retry-after-ms", "1500"), requests: 2, text: "HTTP 503"},
		{name: "a plain-text error body", reply: status(502, "upstream connect error"), requests: 2, text: "HTTP 502 Bad Gateway: upstream connect error"},
		{name: "an error string instead of an object", reply: status(404, `{"error":"model 'llama9' not found"}`), requests: 1, want: contracts.ErrInvalid, text: "HTTP 404 Not Found: model 'llama9' not found"},
		{name: "a numeric code in a stream error", reply: sse(`{"error":{"message":"busy","type":"Error","code":503}}`), requests: 2, text: "(Error, 503): busy"},
		{name: "a 4xx numeric code in a stream error", reply: sse(`{"error":{"message":"too long","type":"BadRequestError","code":400}}`), requests: 1, want: contracts.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, script(tc.reply))
			sl := &sleeps{}
			c, err := openai.New(openai.Config{BaseURL: f.url(), Retry: retry.Policy{Attempts: 2, Sleep: sl.policy().Sleep}})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = stream(c)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("error %v, want %v containing %q", err, tc.want, tc.text)
			}
			if n := len(f.requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d", n, tc.requests)
			}
			if tc.name == "retry-after-ms is honoured" && (len(sl.waits()) != 1 || sl.waits()[0] < 1500e6) {
				t.Fatalf("waits %v", sl.waits())
			}
		})
	}
}

func TestStreamNetworkErrorIsRetried(t *testing.T) {
	f := newFake(t, script(answer(1, 1, "never")))
	base := f.url()
	f.srv.Close() // nothing listens any more
	sl := &sleeps{}
	c, err := openai.New(openai.Config{BaseURL: base, Retry: retry.Policy{Attempts: 3, Sleep: sl.policy().Sleep}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = stream(c)
	if err == nil || errors.Is(err, contracts.ErrInvalid) || len(sl.waits()) != 2 {
		t.Fatalf("error %v after waits %v, want a retryable failure after 3 attempts", err, sl.waits())
	}
}

func TestStreamEmitErrorAborts(t *testing.T) {
	f := newFake(t, script(answer(1, 1, "one", "two")))
	c := client(t, f, &sleeps{})
	stop := errors.New("store full")
	n := 0
	_, err := c.Stream(context.Background(), contracts.ModelRequest{Model: "gpt-test"}, func(contracts.ModelEvent) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 || len(f.requests()) != 1 {
		t.Fatalf("error %v after %d events and %d requests", err, n, len(f.requests()))
	}
}

func TestKeyIsNeverInErrors(t *testing.T) {
	f := newFake(t, script(
		sse(`{"error":{"message":"key `+testKey+` is revoked","type":"invalid_request_error"}}`),
	))
	_, _, err := stream(client(t, f, &sleeps{}))
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error %v", err)
	}
	var se *openai.StreamError
	if !errors.As(err, &se) || se.Type != "invalid_request_error" {
		t.Fatalf("error %#v is not a StreamError", err)
	}
}
