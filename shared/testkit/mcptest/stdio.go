package mcptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioArg, as a test binary's first argument, makes it a stdio MCP
// server (ServeStdioIfAsked, called first in TestMain): a real server of
// the official SDK, over stdin and stdout, that a sandbox can start as a
// command. Its tools:
//
//	echo {text}   read-only: "echo: <text>", and {"text"} as structured content
//	append {line} mutating: appends line to mcp-log.txt in its directory
//	pid {}        read-only: its process id (the same process between calls?)
//	env {}        read-only: its environment, one NAME=value a line, sorted
//	die {}        the server dies during the call (exit 3, "dying" on stderr)
//	grow {}       adds a tool "extra" (the server announces the change)
//	fail {}       an isError result
const StdioArg = "-cairn-mcptest-stdio-server"

// StdioCommand is the command that runs this test binary as the server.
func StdioCommand() []string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return []string{exe, StdioArg}
}

// ServeStdioIfAsked serves MCP on stdio and exits when the binary was
// started with StdioArg; otherwise it returns at once.
func ServeStdioIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != StdioArg {
		return
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest-stdio", Version: "1"}, nil)
	type text struct {
		Text string `json:"text"`
	}
	type line struct {
		Line string `json:"line"`
	}
	type none struct{}
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo text.", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, in text) (*sdk.CallToolResult, text, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, in, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "append", Description: "Append a line to mcp-log.txt."}, func(ctx context.Context, req *sdk.CallToolRequest, in line) (*sdk.CallToolResult, any, error) {
		f, err := os.OpenFile("mcp-log.txt", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		if _, err := fmt.Fprintln(f, in.Line); err != nil {
			return nil, nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "appended"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "The server's process id.", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "The server's environment.", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		env := os.Environ()
		sort.Strings(env)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(env, "\n")}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "die", Description: "Die during the call."}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "dying")
		os.Exit(3)
		return nil, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fail.", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it failed"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "grow", Description: "Add a tool.", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(s, &sdk.Tool{Name: "extra", Description: "Added later."}, func(context.Context, *sdk.CallToolRequest, none) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "extra"}}}, nil, nil
		})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown"}}}, nil, nil
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest stdio server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// InstallStdio copies this test binary into dir (a session's workspace,
// made if missing) as name, runnable by the sandbox's user, and returns
// the server's command relative to the workspace ("./name", StdioArg).
func InstallStdio(t testing.TB, dir, name string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"./" + name, StdioArg}
}
