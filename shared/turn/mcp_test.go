package turn_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/testkit/mcptest"
	"github.com/cairnrun/cairn/shared/testkit/spantest"
	"github.com/cairnrun/cairn/shared/turn"
)

// toolsSeen wraps the scripted model and records the tool names each
// model request offered.
type toolsSeen struct {
	*scripted.Client
	mu   sync.Mutex
	seen [][]string
}

func (m *toolsSeen) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	m.mu.Lock()
	m.seen = append(m.seen, names)
	m.mu.Unlock()
	return m.Client.Stream(ctx, req, emit)
}

// A session's MCP tools: listed and pinned when it is created, offered by
// every model step (also with the server gone), called with input checked
// against the pinned schema first; a server that is down is a tool error
// naming it and the turn ends.
func TestMCPToolsInATurn(t *testing.T) {
	exp := spantest.Record(t)
	srv := mcptest.Start(t, mcptest.Streamable)
	model := &toolsSeen{Client: scripted.New()}
	h := enginetest.New(t, func(p *assemble.Ports) { p.Models["scripted"] = model })
	spec := contracts.SessionSpec{Model: "scripted:call", MCP: []contracts.MCPServer{{Name: "everything", URL: srv.URL, Tools: []string{"echo", "get-sum", "toggle-simulated-logging"}}}}
	sess, err := h.RT.Engine.CreateSession(context.Background(), enginetest.User, spec)
	if err != nil {
		t.Fatal(err)
	}
	if sess.MCP == nil || len(sess.MCP.Tools) != 3 || sess.MCP.Fingerprint != turn.MCPFingerprint(sess.MCP.Tools) {
		t.Fatalf("pin %+v", sess.MCP)
	}
	effects := map[string]bool{}
	for _, tl := range sess.MCP.Tools {
		effects[tl.Name] = tl.ReadOnly
	}
	if !effects["mcp__everything__echo"] || effects["mcp__everything__toggle-simulated-logging"] {
		t.Fatalf("read-only by annotation: %v", effects)
	}

	run := func(prompt string) (contracts.Submission, []string) {
		t.Helper()
		sub := h.Submit(sess.ID, prompt)
		h.Drain()
		got := h.Get(sub.ID)
		if got.Phase != contracts.PhaseCommitted {
			t.Fatalf("%q: %s %s", prompt, got.Phase, got.Error)
		}
		return got, h.Transcript(sess.ID)
	}
	echoed, tr := run(`mcp__everything__echo {"message":"hi from cairn"}`)
	if !slices.ContainsFunc(tr, func(l string) bool { return strings.Contains(l, "Echo: hi from cairn") }) {
		t.Fatalf("the echo result is not in the transcript:\n%s", strings.Join(tr, "\n"))
	}
	// Read-only, but a server's: the tools phase calls it, not the model
	// phase (fuse.go runs only calls whose work is in the sandbox).
	if _, under := phaseSpans(t, exp, echoed.ID); !slices.Equal(under, []string{"cairn.phase tools"}) {
		t.Errorf("the read-only MCP call ran under %v, want the tools phase", under)
	}
	// Input is checked against the pinned schema before any call.
	_, tr = run(`mcp__everything__get-sum {"a":"one","b":2}`)
	if !slices.ContainsFunc(tr, func(l string) bool { return strings.Contains(l, "invalid input for tool mcp__everything__get-sum") }) {
		t.Fatalf("a schema violation reached the server:\n%s", strings.Join(tr, "\n"))
	}
	// A mutating MCP tool runs like a built-in one: its started marker
	// first, its result once.
	sub, _ := run(`mcp__everything__toggle-simulated-logging {}`)
	recs, err := h.Store.ToolRecords(context.Background(), sub.ID, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("tool records %v, %v", recs, err)
	}
	for _, r := range recs {
		if !r.Started || r.Result == nil || r.Result.IsError {
			t.Fatalf("mutating call record %+v", r)
		}
	}
	// The server is gone: the next turn still offers the pinned tools, and
	// the call is an error result naming the server, not a stuck turn.
	srv.Kill()
	_, tr = run(`mcp__everything__echo {"message":"anyone?"}`)
	if !slices.ContainsFunc(tr, func(l string) bool { return strings.Contains(l, "MCP server everything is unavailable") }) {
		t.Fatalf("a down server is not named:\n%s", strings.Join(tr, "\n"))
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	want := []string{"mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__toggle-simulated-logging"}
	for i, names := range model.seen {
		if !slices.Equal(names, want) {
			t.Fatalf("model step %d offered %v, want the pinned %v", i, names, want)
		}
	}
}

// A spec whose server cannot be reached is refused at creation, naming it;
// a header given as a value instead of a secret reference is refused
// without echoing it.
func TestMCPSpecRefused(t *testing.T) {
	h := enginetest.New(t)
	_, err := h.RT.Engine.CreateSession(context.Background(), enginetest.User, contracts.SessionSpec{Model: "scripted:plain",
		MCP: []contracts.MCPServer{{Name: "gone", URL: "http://127.0.0.1:1/mcp"}}})
	if !errors.Is(err, contracts.ErrUnavailable) || !strings.Contains(err.Error(), "mcp server gone") {
		t.Fatalf("unreachable server: %v", err)
	}
	for _, c := range []struct {
		s    contracts.MCPServer
		want string
	}{
		{contracts.MCPServer{Name: "x", URL: "http://h/mcp", Headers: map[string]string{"Authorization": "Bearer hunter2"}}, "want a secret reference"},
		{contracts.MCPServer{Name: "Bad Name", URL: "http://h/mcp"}, "mcp[0].name"},
		{contracts.MCPServer{Name: "x", URL: "ftp://h/mcp"}, "mcp[0].url"},
		{contracts.MCPServer{Name: "x", URL: "https://user:pw@h/mcp"}, "without credentials"},
		{contracts.MCPServer{Name: "x", Command: []string{"npx", "server"}}, "in_sandbox"},
		{contracts.MCPServer{Name: "x", Command: []string{" "}, InSandbox: true}, "mcp[0].command[0]"},
		{contracts.MCPServer{Name: "x", Command: []string{"s", "a\x00b"}, InSandbox: true}, "mcp[0].command[1]"},
		{contracts.MCPServer{Name: "x", Command: []string{"s"}, URL: "http://h/mcp", InSandbox: true}, "url and command"},
		{contracts.MCPServer{Name: "x", Command: []string{"s"}, InSandbox: true, Headers: map[string]string{"A": "env:X"}}, "headers are a remote server's"},
		{contracts.MCPServer{Name: "x", URL: "http://h/mcp", Transport: "ws"}, "mcp[0].transport"},
	} {
		err := turn.CheckSpec(contracts.SessionSpec{MCP: []contracts.MCPServer{c.s}})
		if !errors.Is(err, contracts.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%+v: %v, want ErrInvalid saying %q", c.s, err, c.want)
		}
	}
}

// A stdio server in the session's sandbox: listed and pinned at the first
// model phase (it is started there, in the workspace, as the commands'
// user), kept between calls, its mutating call made once; a server that
// dies mid-call is a tool error quoting it; another process — its own
// sandbox provider, no server running — offers the pinned tools and
// starts the server again.
func TestMCPStdioServerInTheSandbox(t *testing.T) {
	model := &toolsSeen{Client: scripted.New()}
	h := enginetest.New(t, func(p *assemble.Ports) { p.Models["scripted"] = model })
	spec := contracts.SessionSpec{Model: "scripted:call", MCP: []contracts.MCPServer{{Name: "kit", Command: []string{"./kit-server", mcptest.StdioArg},
		InSandbox: true, Tools: []string{"echo", "append", "die"}}}}
	sess, err := h.RT.Engine.CreateSession(context.Background(), enginetest.User, spec)
	if err != nil {
		t.Fatal(err)
	}
	if sess.MCP != nil && len(sess.MCP.Tools) > 0 {
		t.Fatalf("a stdio server was listed before its sandbox existed: %+v", sess.MCP)
	}
	t.Cleanup(func() { _ = h.RT.Ports.Sandboxes.Release(context.Background(), sess.ID) }) // stops its server
	// The server is this test binary, put in the workspace (the commands'
	// user can run it there).
	mcptest.InstallStdio(t, filepath.Join(h.SandboxDir, sess.ID), "kit-server")
	run := func(rt *assemble.Runtime, prompt string) []string {
		t.Helper()
		sub, _, err := rt.Engine.Accept(context.Background(), sess.ID, prompt, "")
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n > 0; {
			n = 0
			for _, q := range rt.Workers.Queues {
				got, err := rt.Workers.Once(context.Background(), q, 10)
				if err != nil {
					t.Fatal(err)
				}
				n += got
			}
		}
		if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
			t.Fatalf("%q: %s %s", prompt, got.Phase, got.Error)
		}
		return h.Transcript(sess.ID)
	}
	has := func(tr []string, s string) bool {
		return slices.ContainsFunc(tr, func(l string) bool { return strings.Contains(l, s) })
	}
	run(h.RT, `mcp__kit__append {"line":"one"}`)
	if got := h.File(sess.ID, "mcp-log.txt"); got != "one\n" {
		t.Fatalf("the mutating call ran %q times, want once in the workspace", got)
	}
	pinned, err := h.Store.GetSession(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pinned.MCP == nil || !slices.Equal(pinned.MCP.Servers, []string{"kit"}) || len(pinned.MCP.Tools) != 3 || pinned.MCP.Fingerprint != turn.MCPFingerprint(pinned.MCP.Tools) {
		t.Fatalf("pin after the first model phase: %+v", pinned.MCP)
	}
	if tr := run(h.RT, `mcp__kit__echo {"text":"hi"}`); !has(tr, "echo: hi") || !has(tr, `structured content: {"text":"hi"}`) {
		t.Fatalf("echo's result:\n%s", strings.Join(tr, "\n"))
	}
	if tr := run(h.RT, `mcp__kit__die {}`); !has(tr, "MCP server kit (in the sandbox) failed the call to die") || !has(tr, "dying") {
		t.Fatalf("a server that died mid-call:\n%s", strings.Join(tr, "\n"))
	}
	// Another process: its own provider (no server running) and engine.
	ports := h.RT.Ports
	ports.Sandboxes = local.NewProvider(h.SandboxDir, local.Options{Env: []string{"PATH=" + os.Getenv("PATH")}})
	other, err := assemble.New(ports, assemble.Config{Owner: "other-process"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ports.Sandboxes.Release(context.Background(), sess.ID) })
	if tr := run(other, `mcp__kit__append {"line":"two"}`); !has(tr, "appended") {
		t.Fatalf("the other process's call:\n%s", strings.Join(tr, "\n"))
	}
	if got := h.File(sess.ID, "mcp-log.txt"); got != "one\ntwo\n" {
		t.Fatalf("mcp-log.txt %q, want each mutating call once", got)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	want := []string{"mcp__kit__append", "mcp__kit__die", "mcp__kit__echo"} // as the server lists them
	for i, names := range model.seen {
		if !slices.Equal(names, want) {
			t.Fatalf("model step %d offered %v, want the pinned %v", i, names, want)
		}
	}
}

// A stdio server that does not start ends the turn FAILED, naming it and
// quoting its stderr, before any model call.
func TestMCPStdioServerThatDoesNotStart(t *testing.T) {
	h := enginetest.New(t)
	sess, err := h.RT.Engine.CreateSession(context.Background(), enginetest.User, contracts.SessionSpec{Model: "scripted:plain",
		MCP: []contracts.MCPServer{{Name: "broken", Command: []string{"sh", "-c", "echo no such package >&2; exit 1"}, InSandbox: true}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.RT.Ports.Sandboxes.Release(context.Background(), sess.ID) })
	sub := h.Submit(sess.ID, "hello")
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseFailed || !strings.Contains(got.Error, "mcp_tools:") || !strings.Contains(got.Error, "broken") || !strings.Contains(got.Error, "no such package") {
		t.Fatalf("%s %q, want FAILED mcp_tools naming the server and quoting its stderr", got.Phase, got.Error)
	}
	if n := h.Model.Calls(); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
}
