package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/mcp"
	"github.com/cairnrun/cairn/shared/testkit/mcptest"
)

func find(ts []contracts.MCPTool, tool string) (contracts.MCPTool, bool) {
	for _, t := range ts {
		if t.Tool == tool {
			return t, true
		}
	}
	return contracts.MCPTool{}, false
}

// The reference server over both of its HTTP transports: list, a
// read-only call, structured content, an image, an error result.
func TestEverythingServer(t *testing.T) {
	for _, mode := range []string{mcptest.Streamable, mcptest.SSE} {
		t.Run(mode, func(t *testing.T) {
			srv := mcptest.Start(t, mode)
			s := contracts.MCPServer{Name: "everything", URL: srv.URL}
			if mode == mcptest.SSE {
				s.Transport = contracts.MCPSSE
			}
			c := &mcp.Connector{}
			ctx := context.Background()
			tools, err := c.ListTools(ctx, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			echo, ok := find(tools, "echo")
			if !ok || echo.Name != "mcp__everything__echo" || !echo.ReadOnly || !strings.Contains(string(echo.InputSchema), "message") {
				t.Fatalf("echo pinned as %+v (of %d tools)", echo, len(tools))
			}
			call := func(tool, input string) contracts.ToolResult {
				t.Helper()
				r, err := c.CallTool(ctx, contracts.MCPCall{Server: s, Tool: tool, Input: json.RawMessage(input), Meta: map[string]any{"cairn/effect_id": "eff-1"}, Pinned: tools})
				if err != nil {
					t.Fatalf("CallTool(%s): %v", tool, err)
				}
				return r
			}
			if r := call("echo", `{"message":"hi"}`); r.IsError || r.Content != "Echo: hi" {
				t.Fatalf("echo: %+v", r)
			}
			if r := call("get-structured-content", `{"location":"Chicago"}`); r.IsError || !strings.Contains(r.Content, "structured content: {") || !strings.Contains(r.Content, "temperature") {
				t.Fatalf("structured: %+v", r)
			}
			if r := call("get-tiny-image", `{}`); r.IsError || !strings.Contains(r.Content, "[image: image/png, ") {
				t.Fatalf("image: %+v", r)
			}
			if r := call("get-resource-reference", `{"resourceType":"Text","resourceId":-1}`); !r.IsError {
				t.Fatalf("a failing tool: %+v, want an error result", r)
			}
		})
	}
}

// The allowlist keeps only the tools it names; one the server lacks
// fails the listing.
func TestToolsAllowlist(t *testing.T) {
	srv := mcptest.Start(t, mcptest.Streamable)
	c := &mcp.Connector{}
	tools, err := c.ListTools(context.Background(), contracts.MCPServer{Name: "ev", URL: srv.URL, Tools: []string{"echo", "get-sum"}, ReadOnly: []string{"get-sum"}}, nil)
	if err != nil || len(tools) != 2 {
		t.Fatalf("ListTools = %d tools, %v; want echo and get-sum", len(tools), err)
	}
	if _, err := c.ListTools(context.Background(), contracts.MCPServer{Name: "ev", URL: srv.URL, Tools: []string{"no-such"}}, nil); err == nil || !strings.Contains(err.Error(), `no tool "no-such"`) {
		t.Fatalf("a missing allowlisted tool: %v", err)
	}
}

// goServer is an in-process MCP server (the official SDK's, over real
// HTTP) that records what it was sent and whose "block" tool waits until
// released or its connection dies.
type goServer struct {
	*httptest.Server
	auth    chan string
	meta    chan map[string]any
	started chan struct{}
	release chan struct{} // ends a blocked call's handler (the test's end)
}

func newGoServer(t *testing.T) *goServer {
	g := &goServer{auth: make(chan string, 8), meta: make(chan map[string]any, 8), started: make(chan struct{}, 1), release: make(chan struct{})}
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	type in struct {
		Word string `json:"word"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "say", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, v in) (*sdk.CallToolResult, any, error) {
			g.auth <- req.Extra.Header.Get("Authorization")
			g.meta <- req.Params.Meta
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "said " + v.Word}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "block"}, func(ctx context.Context, req *sdk.CallToolRequest, v in) (*sdk.CallToolResult, any, error) {
		g.started <- struct{}{}
		select { // the SDK may keep the handler's context past its connection
		case <-ctx.Done():
		case <-g.release:
		}
		return nil, nil, ctx.Err()
	})
	g.Server = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
		g.Close() // waits for the handlers
	})
	return g
}

// Headers are secret references resolved at the call and sent on every
// request; the call's _meta carries its effect id.
func TestHeadersAndMeta(t *testing.T) {
	g := newGoServer(t)
	refs := map[string]string{"env:TOKEN": "Bearer s3cret"}
	c := &mcp.Connector{Resolve: func(_ context.Context, ref string) (string, error) {
		v, ok := refs[ref]
		if !ok {
			return "", contracts.ErrNotFound
		}
		return v, nil
	}}
	s := contracts.MCPServer{Name: "go", URL: g.URL, Headers: map[string]string{"Authorization": "env:TOKEN"}}
	tools, err := c.ListTools(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if say, ok := find(tools, "say"); !ok || !say.ReadOnly {
		t.Fatalf("say: %+v", say)
	}
	if blk, ok := find(tools, "block"); !ok || blk.ReadOnly {
		t.Fatalf("block (no readOnlyHint) must be mutating: %+v", blk)
	}
	r, err := c.CallTool(context.Background(), contracts.MCPCall{Server: s, Tool: "say", Input: json.RawMessage(`{"word":"hello"}`), Meta: map[string]any{"cairn/effect_id": "eff-42"}, Pinned: tools})
	if err != nil || r.IsError || r.Content != "said hello" {
		t.Fatalf("call: %+v, %v", r, err)
	}
	if got := <-g.auth; got != "Bearer s3cret" {
		t.Fatalf("Authorization %q", got)
	}
	if m := <-g.meta; m["cairn/effect_id"] != "eff-42" {
		t.Fatalf("_meta %v, want the effect id", m)
	}
	// An unresolvable reference fails before anything is sent.
	bad := s
	bad.Headers = map[string]string{"Authorization": "env:MISSING"}
	if r, err := c.CallTool(context.Background(), contracts.MCPCall{Server: bad, Tool: "say", Input: json.RawMessage(`{"word":"x"}`)}); err != nil || !r.IsError || !strings.Contains(r.Content, "MCP server go is unavailable") {
		t.Fatalf("unresolvable header: %+v, %v", r, err)
	}
}

// A server that is down, or dies mid-call, is an error result naming it,
// not an error (the turn goes on and the model is told).
func TestServerDownAndKilledMidCall(t *testing.T) {
	g := newGoServer(t)
	c := &mcp.Connector{}
	s := contracts.MCPServer{Name: "go", URL: g.URL}
	done := make(chan contracts.ToolResult, 1)
	go func() {
		r, err := c.CallTool(context.Background(), contracts.MCPCall{Server: s, Tool: "block", Input: json.RawMessage(`{"word":"w"}`)})
		if err != nil {
			r = contracts.ToolResult{Content: "error: " + err.Error()}
		}
		done <- r
	}()
	select {
	case <-g.started: // the call is running on the server
	case r := <-done:
		t.Fatalf("the blocking call returned before it ran: %+v", r)
	}
	g.CloseClientConnections() // the server's side of the call is cut
	r := <-done
	if !r.IsError || !strings.Contains(r.Content, "MCP server go failed the call to block") || !strings.Contains(r.Content, "may or may not have run") {
		t.Fatalf("killed mid-call: %+v", r)
	}
	close(g.release)
	g.Close() // and now it is gone
	r, err := c.CallTool(context.Background(), contracts.MCPCall{Server: s, Tool: "say", Input: json.RawMessage(`{"word":"x"}`)})
	if err != nil || !r.IsError || !strings.Contains(r.Content, "MCP server go is unavailable") || !strings.Contains(r.Content, "not made") {
		t.Fatalf("down: %+v, %v", r, err)
	}
}

func TestToolName(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"docs", "search", "mcp__docs__search"},
		{"docs", "get-sum", "mcp__docs__get-sum"},
	} {
		if got := mcp.ToolName(c.server, c.tool); got != c.want {
			t.Errorf("ToolName(%s, %s) = %s", c.server, c.tool, got)
		}
	}
	a, b := mcp.ToolName("docs", "a.b"), mcp.ToolName("docs", "a/b")
	if a == b || !strings.HasPrefix(a, "mcp__docs__a_b_") {
		t.Errorf("names with refused characters: %s, %s", a, b)
	}
	long := mcp.ToolName("server-with-a-long-name-xx", strings.Repeat("t", 80))
	if len(long) > mcp.MaxToolName {
		t.Errorf("%s is %d bytes", long, len(long))
	}
}

// A server that accepts and never answers fails the listing (a session's
// creation waits for it inside an API request) and the call, as errors
// naming it, within the connector's bounds.
func TestSilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	s := contracts.MCPServer{Name: "mute", URL: "http://" + l.Addr().String() + "/mcp"}
	c := &mcp.Connector{ListTimeout: 300 * time.Millisecond, ConnectTimeout: 300 * time.Millisecond, CallTimeout: 300 * time.Millisecond}
	if _, err := c.ListTools(context.Background(), s, nil); err == nil || !strings.Contains(err.Error(), "mcp server mute") {
		t.Fatalf("listing a silent server: %v", err)
	}
	r, err := c.CallTool(context.Background(), contracts.MCPCall{Server: s, Tool: "x"})
	if err != nil || !r.IsError || !strings.Contains(r.Content, "MCP server mute is unavailable") {
		t.Fatalf("calling a silent server: %+v, %v", r, err)
	}
}
