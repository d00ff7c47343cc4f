package local

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked()
	os.Exit(m.Run())
}

// mcpCall calls tool of the test server in sb and returns its result.
func mcpCall(t *testing.T, sb contracts.MCPHost, tool, args string) map[string]any {
	t.Helper()
	res, err := sb.MCP(context.Background(), contracts.MCPRequest{Command: mcptest.StdioCommand(), Method: contracts.MCPCallTool,
		Params: json.RawMessage(`{"name":"` + tool + `","arguments":` + args + `}`)})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var out map[string]any
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func firstText(r map[string]any) string {
	c, _ := r["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	m, _ := c[0].(map[string]any)
	s, _ := m["text"].(string)
	return s
}

// TestMCPStdioServer: a stdio server runs in the workspace with the
// sandbox's environment, is kept between requests (one process), and its
// tools' results come back whole.
func TestMCPStdioServer(t *testing.T) {
	sb := newLocal(t, Options{Env: []string{"PATH=" + os.Getenv("PATH"), "CAIRN_SECRET=leak", "GH_TOKEN=leak2", "VISIBLE=yes"}})
	t.Cleanup(sb.CloseMCP)
	list, err := sb.MCP(context.Background(), contracts.MCPRequest{Command: mcptest.StdioCommand(), Method: contracts.MCPListTools})
	if err != nil {
		t.Fatal(err)
	}
	var tools struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(list.Result, &tools); err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools/list: %s (%v)", list.Result, err)
	}
	if r := mcpCall(t, sb, "echo", `{"text":"hi"}`); firstText(r) != "echo: hi" || r["structuredContent"] == nil {
		t.Fatalf("echo: %v", r)
	}
	if r := mcpCall(t, sb, "fail", `{}`); r["isError"] != true {
		t.Fatalf("fail: %v", r)
	}
	pid := firstText(mcpCall(t, sb, "pid", `{}`))
	if again := firstText(mcpCall(t, sb, "pid", `{}`)); again != pid {
		t.Fatalf("the server was started again between requests: pid %s then %s", pid, again)
	}
	env := firstText(mcpCall(t, sb, "env", `{}`))
	if !strings.Contains(env, "HOME="+sb.Root()+"\n") || !strings.Contains(env, "VISIBLE=yes") || strings.Contains(env, "leak") {
		t.Fatalf("the server's environment is not the sandbox's:\n%s", env)
	}
	mcpCall(t, sb, "append", `{"line":"one"}`)
	if b, _ := os.ReadFile(sb.Root() + "/mcp-log.txt"); string(b) != "one\n" {
		t.Fatalf("the mutating tool did not run in the workspace: %q", b)
	}
	// Closed, its process is gone; the next request starts a new one.
	n, _ := strconv.Atoi(pid)
	sb.CloseMCP()
	if err := syscall.Kill(n, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("server process %d still exists after CloseMCP: %v", n, err)
	}
	if again := firstText(mcpCall(t, sb, "pid", `{}`)); again == pid || again == "" {
		t.Fatalf("after CloseMCP: pid %q", again)
	}
}

// TestMCPServerKilledMidCall: a server that dies during a call fails that
// call (naming the exit and quoting its stderr), and the next request
// starts it again.
func TestMCPServerKilledMidCall(t *testing.T) {
	sb := newLocal(t, Options{Env: []string{"PATH=" + os.Getenv("PATH")}})
	t.Cleanup(sb.CloseMCP)
	pid := firstText(mcpCall(t, sb, "pid", `{}`))
	_, err := sb.MCP(context.Background(), contracts.MCPRequest{Command: mcptest.StdioCommand(), Method: contracts.MCPCallTool, Params: json.RawMessage(`{"name":"die","arguments":{}}`)})
	if !errors.Is(err, contracts.ErrUnavailable) || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "dying") {
		t.Fatalf("a call whose server died: %v, want ErrUnavailable naming the exit and its stderr", err)
	}
	if again := firstText(mcpCall(t, sb, "pid", `{}`)); again == "" || again == pid {
		t.Fatalf("after the death: pid %q (was %s)", again, pid)
	}
}

func TestMCPBadRequests(t *testing.T) {
	sb := newLocal(t, Options{Env: []string{"PATH=" + os.Getenv("PATH")}})
	t.Cleanup(sb.CloseMCP)
	for _, r := range []contracts.MCPRequest{
		{Method: contracts.MCPListTools},
		{Command: []string{""}, Method: contracts.MCPListTools},
		{Command: mcptest.StdioCommand(), Method: "resources/list"},
		{Command: mcptest.StdioCommand(), Method: contracts.MCPCallTool, Params: json.RawMessage(`{"arguments":{}}`)},
	} {
		if _, err := sb.MCP(context.Background(), r); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", r, err)
		}
	}
	_, err := sb.MCP(context.Background(), contracts.MCPRequest{Command: []string{"/no/such/server"}, Method: contracts.MCPListTools})
	if !errors.Is(err, contracts.ErrUnavailable) {
		t.Fatalf("a server that cannot start: %v, want ErrUnavailable", err)
	}
	_, err = sb.MCP(context.Background(), contracts.MCPRequest{Command: []string{"sh", "-c", "echo not a server >&2; exit 3"}, Method: contracts.MCPListTools})
	if !errors.Is(err, contracts.ErrUnavailable) || !strings.Contains(err.Error(), "not a server") {
		t.Fatalf("a command that is no server: %v, want ErrUnavailable quoting its stderr", err)
	}
}

// TestMCPIdleServerStops: a server no request used for MCPIdleTimeout is
// stopped (its process exits); the next request starts a new one.
func TestMCPIdleServerStops(t *testing.T) {
	was := MCPIdleTimeout
	MCPIdleTimeout = 50 * time.Millisecond
	t.Cleanup(func() { MCPIdleTimeout = was })
	sb := newLocal(t, Options{Env: []string{"PATH=" + os.Getenv("PATH")}})
	t.Cleanup(sb.CloseMCP)
	pid, _ := strconv.Atoi(firstText(mcpCall(t, sb, "pid", `{}`)))
	// Wait for the exit itself (the bound only ends a failing run).
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.After(time.Minute)
	for syscall.Kill(pid, 0) == nil {
		select {
		case <-tick.C:
		case <-end:
			t.Fatalf("idle server %d still running", pid)
		}
	}
	if again, _ := strconv.Atoi(firstText(mcpCall(t, sb, "pid", `{}`))); again == 0 || again == pid {
		t.Fatalf("after the idle stop: pid %d (was %d)", again, pid)
	}
}
