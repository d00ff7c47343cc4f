package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/mcp"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/testkit/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked()
	os.Exit(m.Run())
}

type none struct{}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// A remote server whose tools change after the session pinned them is
// reported in the next call's result, naming what changed; the pin is not
// re-bound. An unchanged server adds nothing.
func TestChangedRemoteToolsAreReported(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "changing", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "a", Description: "A."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		return text("a ran"), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "b", Description: "B."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		return text("b ran"), nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	s := contracts.MCPServer{Name: "chg", URL: hs.URL}
	c := &mcp.Connector{}
	ctx := context.Background()
	pin, err := c.ListTools(ctx, s, nil)
	if err != nil || len(pin) != 2 {
		t.Fatalf("ListTools: %v %v", pin, err)
	}
	call := func() string {
		t.Helper()
		r, err := c.CallTool(ctx, contracts.MCPCall{Server: s, Tool: "a", Input: json.RawMessage(`{}`), Pinned: pin})
		if err != nil || r.IsError {
			t.Fatalf("call: %+v %v", r, err)
		}
		return r.Content
	}
	if got := call(); got != "a ran" {
		t.Fatalf("unchanged server: %q", got)
	}
	srv.RemoveTools("b")
	sdk.AddTool(srv, &sdk.Tool{Name: "c", Description: "C."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
		return text("c ran"), nil, nil
	})
	got := call()
	if !strings.HasPrefix(got, "a ran\n") || !strings.Contains(got, "MCP server chg's tools changed") || !strings.Contains(got, "added: c; removed: b") {
		t.Fatalf("changed server: %q", got)
	}
}

// A stdio server in a sandbox whose tools may change is compared with the
// pin after each call as well.
func TestChangedStdioToolsAreReported(t *testing.T) {
	sb, err := local.New(t.TempDir(), local.Options{Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.CloseMCP)
	s := contracts.MCPServer{Name: "kit", Command: mcptest.StdioCommand(), InSandbox: true}
	c := &mcp.Connector{}
	ctx := context.Background()
	pin, err := c.ListTools(ctx, s, sb)
	if err != nil {
		t.Fatal(err)
	}
	notes := ""
	for _, call := range []struct{ tool, input string }{{"grow", `{}`}, {"echo", `{"text":"x"}`}} {
		tool := call.tool
		r, err := c.CallTool(ctx, contracts.MCPCall{Server: s, Host: sb, Tool: tool, Input: json.RawMessage(call.input), Pinned: pin})
		if err != nil || r.IsError {
			t.Fatalf("%s: %+v %v", tool, r, err)
		}
		notes += r.Content
	}
	// Every call from the change on says so (the pin stays what it was).
	if strings.Count(notes, "added: extra") != 2 {
		t.Fatalf("the grown tool list was reported %d times in two calls: %q", strings.Count(notes, "added: extra"), notes)
	}
}
