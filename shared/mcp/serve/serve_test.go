package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/mcp/serve"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// world is a harness's API on loopback and an MCP client of its /v1/mcp.
// Nothing runs the harness's queues but Drain: a turn moves only when the
// test says, so what a wait sees is decided by the test, not by timing.
type world struct {
	h        *enginetest.Harness
	url      string
	cs       *sdk.ClientSession
	progress chan string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	h := enginetest.NewConfig(t, assemble.Config{}, enginetest.Workflows(&enginetest.InProcess{}, nil))
	srv := httptest.NewServer(h.RT.API)
	t.Cleanup(srv.Close)
	w := &world{h: h, url: srv.URL, progress: make(chan string, 10000)}
	client := sdk.NewClient(&sdk.Implementation{Name: "serve-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			w.progress <- r.Params.Message
		},
	})
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL + "/v1/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	w.cs = cs
	return w
}

// call calls tool with args (and a progress token) and returns its result.
func (w *world) call(t *testing.T, tool string, args map[string]any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	p := &sdk.CallToolParams{Name: tool, Arguments: args}
	p.SetProgressToken("tok-" + tool)
	res, err := w.cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return res, out
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// post makes a plain API request as the harness's user.
func (w *world) post(t *testing.T, path, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(w.url+path, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d %v", path, resp.StatusCode, err)
	}
	return out
}

func TestToolsListed(t *testing.T) {
	w := newWorld(t)
	var names []string
	for tool, err := range w.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("%s: no input schema or description", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"approve", "cancel", "get_result", "run_agent", "run_workflow"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}

// TestRunAgentHandleThenResult: a turn still running when the wait ends
// comes back as a handle; get_result later reports its whole history as
// progress and returns its result.
func TestRunAgentHandleThenResult(t *testing.T) {
	w := newWorld(t)
	res, out := w.call(t, "run_agent", map[string]any{"prompt": "hi", "model": "scripted:demo", "wait_seconds": 1})
	if res.IsError || out["done"] != false || out["phase"] == "COMMITTED" || out["session_id"] == "" || out["submission_id"] == "" {
		t.Fatalf("run_agent before any worker ran: %s %v", text(res), out)
	}
	if !strings.Contains(text(res), "get_result") {
		t.Errorf("a handle's text does not say what to do next: %s", text(res))
	}
	w.h.Drain()
	res, got := w.call(t, "get_result", map[string]any{"session_id": out["session_id"], "submission_id": out["submission_id"]})
	if res.IsError || got["done"] != true || got["phase"] != "COMMITTED" || got["result"] == "" {
		t.Fatalf("get_result after the turn ran: %s %v", text(res), got)
	}
	if !strings.Contains(text(res), got["result"].(string)) {
		t.Errorf("the result is not in the text content: %s", text(res))
	}
	evs, err := w.h.RT.Ports.Events.ListEvents(context.Background(), got["submission_id"].(string), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// The client handles notifications apart from results: they are
	// counted as they arrive (the bound only ends a failing run).
	var msgs []string
	for len(msgs) < len(evs) {
		select {
		case m := <-w.progress:
			msgs = append(msgs, m)
		case <-time.After(time.Minute):
			t.Fatalf("%d progress notifications for a turn of %d events: %q", len(msgs), len(evs), msgs)
		}
	}
	if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "running ") }) {
		t.Errorf("no progress says a tool runs: %q", msgs)
	}
}

// TestApproveFromMCP: a parked turn returns at once with its approval;
// approve decides it; the turn then commits with the approved call run.
func TestApproveFromMCP(t *testing.T) {
	w := newWorld(t)
	sess := w.post(t, "/v1/sessions", `{"model":"scripted:approval","policy":{"tools":{"bash":"ask"}}}`)
	res, out := w.call(t, "run_agent", map[string]any{"prompt": "go", "session_id": sess["id"], "wait_seconds": 1})
	if res.IsError {
		t.Fatal(text(res))
	}
	w.h.Drain()
	res, got := w.call(t, "get_result", map[string]any{"session_id": sess["id"], "submission_id": out["submission_id"], "wait_seconds": 20})
	aps, _ := got["approvals"].([]any)
	if res.IsError || got["done"] != false || len(aps) != 1 || !strings.Contains(text(res), "approve") {
		t.Fatalf("get_result of a parked turn: %s %v", text(res), got)
	}
	ap := aps[0].(map[string]any)
	if ap["tool"] != "bash" || ap["input"] == nil {
		t.Fatalf("the approval does not show the call: %v", ap)
	}
	res, _ = w.call(t, "approve", map[string]any{"session_id": sess["id"], "approval_id": ap["id"], "decision": "maybe"})
	if !res.IsError || !strings.Contains(text(res), "allow or deny") {
		t.Fatalf("approve with decision maybe: %s", text(res))
	}
	res, got = w.call(t, "approve", map[string]any{"session_id": sess["id"], "approval_id": ap["id"], "decision": "allow", "reason": "fine", "submission_id": out["submission_id"], "wait_seconds": 1})
	if res.IsError || got["done"] != false || got["approvals"] != nil {
		t.Fatalf("approve: %s %v", text(res), got)
	}
	w.h.Drain()
	if _, got = w.call(t, "get_result", map[string]any{"session_id": sess["id"], "submission_id": out["submission_id"]}); got["phase"] != "COMMITTED" {
		t.Fatalf("after approval: %v", got)
	}
	if f := w.h.File(sess["id"].(string), "approved.txt"); f == "" {
		t.Fatal("the approved command did not run")
	}
}

func TestCancelFromMCP(t *testing.T) {
	w := newWorld(t)
	_, out := w.call(t, "run_agent", map[string]any{"prompt": "hi", "wait_seconds": 1})
	res, got := w.call(t, "cancel", map[string]any{"session_id": out["session_id"], "submission_id": out["submission_id"], "reason": "changed my mind"})
	if res.IsError || got["phase"] != "CANCELLED" || got["done"] != true || !strings.Contains(got["error"].(string), "changed my mind") {
		t.Fatalf("cancel: %s %v", text(res), got)
	}
}

func TestRunWorkflowFromMCP(t *testing.T) {
	w := newWorld(t)
	wf := w.post(t, "/v1/workflows", `{"name":"w","script":"result = {\"got\": input[\"n\"] + 1}"}`)
	res, out := w.call(t, "run_workflow", map[string]any{"workflow_id": wf["id"], "input": map[string]any{"n": 41}, "wait_seconds": 1})
	if res.IsError || out["run_id"] == "" {
		t.Fatalf("run_workflow: %s %v", text(res), out)
	}
	w.h.Drain()
	res, got := w.call(t, "run_workflow", map[string]any{"workflow_id": wf["id"], "run_id": out["run_id"]})
	if res.IsError || got["status"] != "SUCCEEDED" || got["done"] != true {
		t.Fatalf("run_workflow run_id: %s %v", text(res), got)
	}
	if r, _ := got["result"].(map[string]any); r["got"] != float64(42) {
		t.Fatalf("the run's result: %v", got["result"])
	}
}

// TestBadCalls: what a client gets wrong is a tool error saying what, never
// a protocol failure or a hang.
func TestBadCalls(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"run_agent", map[string]any{"prompt": "  "}, "prompt is required"},
		{"run_agent", map[string]any{"prompt": "x", "wait_seconds": -1}, "wait_seconds"},
		{"run_agent", map[string]any{"prompt": "x", "wait_seconds": 100000}, "at most 20"},
		{"run_agent", map[string]any{"prompt": "x", "model": "nope:nope"}, "400"},
		{"run_agent", map[string]any{"prompt": "x", "session_id": "ses_missing"}, "404 not_found"},
		{"run_agent", map[string]any{"prompt": "x", "idempotency_key": "k"}, "needs session_id"},
		{"get_result", map[string]any{"session_id": "ses_missing", "submission_id": "sub_missing"}, "404 not_found"},
		{"get_result", map[string]any{"session_id": "s"}, "submission_id"},
		{"cancel", map[string]any{"session_id": "ses_missing", "submission_id": "sub_missing"}, "404"},
		{"run_workflow", map[string]any{"workflow_id": "wf_missing"}, "404 not_found"},
		{"run_workflow", map[string]any{"workflow_id": "w", "run_id": "r", "input": 1}, "leave them out"},
		{"get_result", map[string]any{"session_id": "..", "submission_id": "x"}, "is not an id"},
		{"cancel", map[string]any{"session_id": "s", "submission_id": "."}, "is not an id"},
		{"run_agent", map[string]any{"prompt": strings.Repeat("p", 300<<10)}, "limit"},
	} {
		res, err := w.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Errorf("%s %v: a protocol error: %v", c.tool, c.args, err)
			continue
		}
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s %v: %q (error %v), want an error saying %q", c.tool, c.args, clip(text(res)), res.IsError, c.want)
		}
	}
	// Nothing a refused call asked for was made: no session.
	if ss, err := w.h.Store.ListSessions(context.Background(), "", 0); err != nil || len(ss) != 0 {
		t.Fatalf("refused calls left %d sessions (%v)", len(ss), err)
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// A body over the API's bound is refused before it is read whole, and a
// request through a proxy (a Host that is not loopback) is served.
func TestHTTPBounds(t *testing.T) {
	w := newWorld(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_result","arguments":{"session_id":"` + strings.Repeat("s", serve.MaxBody) + `"}}}`
	req, _ := http.NewRequest("POST", w.url+"/v1/mcp", strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a %d-byte body: %d, want 413", len(big), resp.StatusCode)
	}
	small := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	req, _ = http.NewRequest("POST", w.url+"/v1/mcp", strings.NewReader(small))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Host = "cairn.example.com" // as a reverse proxy forwards it
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("through a proxy: %d, want 200", resp.StatusCode)
	}
}
