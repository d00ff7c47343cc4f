package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/model/retry"
)

// testKey is the API key every test client sends.
const testKey = "sk-ant-test-0123456789abcdef"

// request is one request the fake server received.
type request struct {
	Header http.Header
	Body   map[string]any
}

// messages returns the request's messages.
func (r request) messages() []map[string]any { return objects(r.Body["messages"]) }

// lastHasToolResults reports whether the last message carries tool_result
// blocks (the client is sending back tool results).
func (r request) lastHasToolResults() bool {
	msgs := r.messages()
	if len(msgs) == 0 {
		return false
	}
	for _, c := range objects(msgs[len(msgs)-1]["content"]) {
		if c["type"] == "tool_result" {
			return true
		}
	}
	return false
}

// fake is an httptest server speaking the Messages API: reply answers the
// n-th request (0-based) by writing to w.
type fake struct {
	t     *testing.T
	srv   *httptest.Server
	reply func(n int, r request, w http.ResponseWriter)

	mu    sync.Mutex
	reqs  []request
	waits []time.Duration
}

func newFake(t *testing.T, reply func(n int, r request, w http.ResponseWriter)) *fake {
	f := &fake{t: t, reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	raw, err := io.ReadAll(r.Body)
	var body map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		f.t.Errorf("request body: %v", err)
	}
	req := request{Header: r.Header.Clone(), Body: body}
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	f.reply(n, req, w)
}

// requests returns what the server received so far.
func (f *fake) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// recorded returns the backoff waits the client asked for.
func (f *fake) recorded() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...)
}

// client returns a Client on the fake whose retry waits are recorded, not
// slept.
func (f *fake) client() *Client {
	f.t.Helper()
	c, err := New(Config{
		Key:        func(context.Context) (string, error) { return testKey, nil },
		BaseURL:    f.srv.URL,
		HTTPClient: f.srv.Client(),
		Retry: retry.Policy{Sleep: func(_ context.Context, d time.Duration) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.waits = append(f.waits, d)
			return nil
		}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// --- the SSE wire format ---

func event(name string, data any) string {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return "event: " + name + "\ndata: " + string(b) + "\n\n"
}

type obj = map[string]any

func messageStart(id string, input int) string {
	return event("message_start", obj{"type": "message_start", "message": obj{
		"id": id, "type": "message", "role": "assistant", "content": []any{}, "model": "claude-test",
		"stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1},
	}})
}

func textStart(i int) string {
	return event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
}

func textDelta(i int, s string) string {
	return event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": s}})
}

func toolStart(i int, id, name string) string {
	return event("content_block_start", obj{"type": "content_block_start", "index": i,
		"content_block": obj{"type": "tool_use", "id": id, "name": name, "input": obj{}}})
}

func jsonDelta(i int, s string) string {
	return event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": s}})
}

func blockStop(i int) string {
	return event("content_block_stop", obj{"type": "content_block_stop", "index": i})
}

func messageDelta(stop string, output int) string {
	return event("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": stop, "stop_sequence": nil}, "usage": obj{"output_tokens": output}})
}

func messageStop() string { return event("message_stop", obj{"type": "message_stop"}) }

func ping() string { return event("ping", obj{"type": "ping"}) }

func errorEvent(typ, msg string) string {
	return event("error", obj{"type": "error", "error": obj{"type": typ, "message": msg}})
}

// textAnswer is a whole streamed text answer, split into deltas.
func textAnswer(input, output int, deltas ...string) []string {
	evs := []string{messageStart("msg_text", input), textStart(0), ping()}
	for _, d := range deltas {
		evs = append(evs, textDelta(0, d))
	}
	return append(evs, blockStop(0), messageDelta("end_turn", output), messageStop())
}

// --- replies ---

// stream writes a 200 SSE response, flushing after every event.
func stream(w http.ResponseWriter, evs ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for _, e := range evs {
		_, _ = io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// apiError writes an error response in the API's JSON shape.
func apiError(w http.ResponseWriter, status int, typ, msg string, hdr ...string) {
	for i := 0; i+1 < len(hdr); i += 2 {
		w.Header().Set(hdr[i], hdr[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_test")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_test"}`, typ, msg)
}

// cutChunked streams evs as a chunked response, then aborts the connection
// before the terminating chunk: the client reads an unexpected EOF.
func cutChunked(w http.ResponseWriter, evs ...string) {
	stream(w, evs...)
	panic(http.ErrAbortHandler)
}

// cutClean writes a raw HTTP/1.1 response without a length (delimited by
// the connection's end) and closes the connection after evs: to the client
// the body simply ends, before message_stop.
func cutClean(w http.ResponseWriter, evs ...string) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + strings.Join(evs, ""))
	_ = buf.Flush()
}

// objects reads a JSON array of objects.
func objects(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
