package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/model/openai"
	"github.com/cairnrun/cairn/shared/model/retry"
)

// fake is an OpenAI-compatible server: it records every request and
// answers the n-th (0-based) with reply(n, request).
type fake struct {
	srv   *httptest.Server
	reply func(n int, r request) reply

	mu   sync.Mutex
	reqs []request
}

// request is one recorded request.
type request struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

// messages returns the body's messages.
func (r request) messages() []map[string]any {
	var out []map[string]any
	ms, _ := r.Body["messages"].([]any)
	for _, m := range ms {
		out = append(out, m.(map[string]any))
	}
	return out
}

// reply writes one response.
type reply func(w http.ResponseWriter)

func newFake(t *testing.T, fn func(n int, r request) reply) *fake {
	t.Helper()
	f := &fake{reply: fn}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req := request{Path: r.URL.Path, Header: r.Header.Clone()}
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			t.Errorf("request body is not JSON: %v: %s", err, raw)
		}
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		f.reply(n, req)(w)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// script answers the n-th request with replies[n] (the last one repeats).
func script(replies ...reply) func(int, request) reply {
	return func(n int, _ request) reply { return replies[min(n, len(replies)-1)] }
}

func (f *fake) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// url is the base URL as users configure it ("…/v1").
func (f *fake) url() string { return f.srv.URL + "/v1" }

// sse streams the chunks as `data:` events, then `data: [DONE]`.
func sse(chunks ...string) reply {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// cut streams the chunks, then drops the connection mid-stream.
func cut(chunks ...string) reply {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the server closes the connection
	}
}

// status answers with an error status, headers in pairs, and body.
func status(code int, body string, header ...string) reply {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func chunk(choices []any, usage any) string {
	c := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1764417600,
		"model": "gpt-test", "system_fingerprint": "fp_test", "choices": choices}
	if usage != nil {
		c["usage"] = usage
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func choice(delta map[string]any, finish any) []any {
	return []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
}

// role is the first chunk of every OpenAI stream.
func role() string {
	return chunk(choice(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil), nil)
}

func text(s string) string { return chunk(choice(map[string]any{"content": s}, nil), nil) }

// toolStart opens call index with its id and name; toolArgs adds a fragment.
func toolStart(index int, id, name string) string {
	return chunk(choice(map[string]any{"tool_calls": []any{map[string]any{"index": index, "id": id, "type": "function",
		"function": map[string]any{"name": name, "arguments": ""}}}}, nil), nil)
}

func toolArgs(index int, frag string) string {
	return chunk(choice(map[string]any{"tool_calls": []any{map[string]any{"index": index,
		"function": map[string]any{"arguments": frag}}}}, nil), nil)
}

func finish(reason string) string { return chunk(choice(map[string]any{}, reason), nil) }

func usage(in, out int) string {
	return chunk([]any{}, map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out})
}

// answer is a complete text response in several deltas.
func answer(in, out int, parts ...string) reply {
	cs := []string{role()}
	for _, p := range parts {
		cs = append(cs, text(p))
	}
	return sse(append(cs, finish("stop"), usage(in, out))...)
}

// sleeps records the waits of a retry.Policy instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) policy() retry.Policy {
	return retry.Policy{Sleep: func(_ context.Context, d time.Duration) error {
		s.mu.Lock()
		s.d = append(s.d, d)
		s.mu.Unlock()
		return nil
	}}
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

const testKey = "sk-test-3f9a1c7e"

// client returns a client of f with the test key and recorded sleeps.
func client(t *testing.T, f *fake, sl *sleeps) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{
		BaseURL: f.url(), Retry: sl.policy(),
		Key: func(context.Context) (string, error) { return testKey, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
