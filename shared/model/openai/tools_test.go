package openai_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/openai"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

const (
	writeArgs = `{"path":"notes.txt","content":"hello from openai\n"}`
	readArgs  = `{"path":"notes.txt"}`
)

// toolModel answers a request without tool messages with two tool calls —
// write_file and read_file, their deltas interleaved and the arguments split
// mid-token and mid-escape — and a request with them by quoting the
// read_file result.
func toolModel(_ int, r request) reply {
	for _, m := range r.messages() {
		if m["role"] == "tool" && m["tool_call_id"] == "call_read" {
			return answer(80, 9, "notes.txt says: ", m["content"].(string))
		}
	}
	return sse(
		role(),
		toolStart(0, "call_write", "write_file"),
		toolArgs(0, `{"pa`),
		toolStart(1, "call_read", "read_file"),
		toolArgs(1, `{"path":"no`),
		toolArgs(0, `th":"notes.txt","con`),
		toolArgs(0, `tent":"hello from open`),
		toolArgs(1, `tes.txt"}`),
		toolArgs(0, `ai\`),
		toolArgs(0, `n"}`),
		finish("tool_calls"),
		usage(60, 31),
	)
}

// systemTurn is enginetest.ModelTurn with a system prompt in the session spec.
func systemTurn(t *testing.T, c contracts.ModelClient, system, prompt string) (contracts.Submission, []string, string) {
	t.Helper()
	h := enginetest.New(t, func(p *assemble.Ports) { p.Models[enginetest.ModelProvider] = c })
	s := h.Session(contracts.SessionSpec{Model: enginetest.ModelProvider + ":gpt-test", System: system})
	sub := h.Submit(s.ID, prompt)
	h.Drain()
	return h.Get(sub.ID), h.Transcript(s.ID), h.File(s.ID, "notes.txt")
}

func TestTurnRunsSeveralToolCalls(t *testing.T) {
	cases := []struct {
		name string
		key  func(context.Context) (string, error)
		auth string // the Authorization header the server must see
	}{
		{"OpenAI with a bearer key", func(context.Context) (string, error) { return testKey, nil }, "Bearer " + testKey},
		{"Ollama-style base URL without a key", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, toolModel)
			sl := &sleeps{}
			c, err := openai.New(openai.Config{BaseURL: f.url(), Key: tc.key, Retry: sl.policy()})
			if err != nil {
				t.Fatal(err)
			}
			sub, transcript, file := systemTurn(t, c, "You are terse.", "save a note, then read it")

			if sub.Phase != contracts.PhaseCommitted {
				t.Fatalf("phase %s (%s)", sub.Phase, sub.Error)
			}
			if file != "hello from openai\n" {
				t.Fatalf("notes.txt holds %q: write_file did not run with the assembled arguments", file)
			}
			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			want := []string{
				"user: text=save a note, then read it",
				"assistant: use=write_file" + writeArgs + " use=read_file" + readArgs,
				"tool: result=wrote 18 bytes to notes.txt result=hello from openai\n",
				"assistant: text=notes.txt says: hello from openai\n",
			}
			if !reflect.DeepEqual(transcript, want) {
				t.Fatalf("transcript\n%q\nwant\n%q", transcript, want)
			}
			if sub.Usage != (contracts.Usage{InputTokens: 140, OutputTokens: 40}) || sub.Result != "notes.txt says: hello from openai\n" {
				t.Fatalf("usage %+v result %q", sub.Usage, sub.Result)
			}
			for i, r := range reqs {
				checkRequest(t, i, r, tc.auth)
			}
			checkToolMessages(t, reqs[1])
		})
	}
}

// checkRequest asserts what every request carries.
func checkRequest(t *testing.T, i int, r request, auth string) {
	t.Helper()
	if got := r.Header.Get("Authorization"); got != auth {
		t.Errorf("request %d: Authorization %q, want %q", i, got, auth)
	}
	if r.Path != "/v1/chat/completions" || r.Body["model"] != "gpt-test" || r.Body["stream"] != true {
		t.Errorf("request %d: path %s model %v stream %v", i, r.Path, r.Body["model"], r.Body["stream"])
	}
	if so, _ := r.Body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("request %d: stream_options %v", i, r.Body["stream_options"])
	}
	if m := r.messages(); len(m) < 2 || m[0]["role"] != "system" || m[0]["content"] != "You are terse." ||
		m[1]["role"] != "user" || m[1]["content"] != "save a note, then read it" {
		t.Errorf("request %d: first messages %v", i, m)
	}
	tools, _ := r.Body["tools"].([]any)
	found := false
	for _, x := range tools {
		tl := x.(map[string]any)
		fn := tl["function"].(map[string]any)
		params, _ := fn["parameters"].(map[string]any)
		if tl["type"] != "function" || params["type"] != "object" || fn["description"] == "" {
			t.Errorf("request %d: tool %v", i, tl)
		}
		if fn["name"] == "write_file" {
			props, _ := params["properties"].(map[string]any)
			found = props["path"] != nil && props["content"] != nil && params["required"] != nil
		}
	}
	if !found {
		t.Errorf("request %d: no write_file tool with its schema among %d tools", i, len(tools))
	}
}

// checkToolMessages asserts the second request replays the assistant's tool
// calls and one tool message per result, each with its tool_call_id.
func checkToolMessages(t *testing.T, r request) {
	t.Helper()
	m := r.messages()
	if len(m) != 5 {
		t.Fatalf("second request has %d messages: %v", len(m), m)
	}
	calls, _ := m[2]["tool_calls"].([]any)
	if m[2]["role"] != "assistant" || len(calls) != 2 {
		t.Fatalf("assistant message %v", m[2])
	}
	for i, want := range []struct{ id, name, args string }{{"call_write", "write_file", writeArgs}, {"call_read", "read_file", readArgs}} {
		c := calls[i].(map[string]any)
		fn := c["function"].(map[string]any)
		if c["id"] != want.id || c["type"] != "function" || fn["name"] != want.name || fn["arguments"] != want.args {
			t.Errorf("tool call %d: %v, want %+v", i, c, want)
		}
	}
	for i, want := range []struct{ id, content string }{{"call_write", "wrote 18 bytes to notes.txt"}, {"call_read", "hello from openai\n"}} {
		if tm := m[3+i]; tm["role"] != "tool" || tm["tool_call_id"] != want.id || tm["content"] != want.content {
			t.Errorf("tool message %d: %v, want %+v", i, tm, want)
		}
	}
}
