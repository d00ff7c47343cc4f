package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/mcptest"
)

// mcpClient connects the Go SDK's client over t and collects progress
// messages on its channel.
func mcpClient(t *testing.T, tr sdk.Transport) (*sdk.ClientSession, chan string) {
	t.Helper()
	progress := make(chan string, 10000)
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn-mcp-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { progress <- r.Params.Message },
	})
	cs, err := client.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, progress
}

// runDemo runs the scripted demo turn through run_agent and checks it
// commits with its result, reporting progress; then get_result from the
// handle gives the same result.
func runDemo(t *testing.T, cs *sdk.ClientSession, progress chan string) {
	t.Helper()
	ctx := context.Background()
	p := &sdk.CallToolParams{Name: "run_agent", Arguments: map[string]any{"prompt": "do the demo", "model": "scripted:demo", "tools": []string{"write_file", "list_dir", "read_file", "bash"}}}
	p.SetProgressToken("demo")
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		SessionID    string `json:"session_id"`
		SubmissionID string `json:"submission_id"`
		Phase        string `json:"phase"`
		Done         bool   `json:"done"`
		Result       string `json:"result"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || res.IsError || !out.Done || out.Phase != "COMMITTED" || out.Result == "" {
		t.Fatalf("run_agent: error %v, %s", res.IsError, b)
	}
	// Progress: every event of the turn, the tools' among them.
	var msgs []string
	for !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "running bash") }) {
		select {
		case m := <-progress:
			msgs = append(msgs, m)
		case <-time.After(time.Minute): // ends a failing run only
			t.Fatalf("no progress says bash runs: %q", msgs)
		}
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_result", Arguments: map[string]any{"session_id": out.SessionID, "submission_id": out.SubmissionID}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, out.Result) {
		t.Fatalf("get_result: %v %+v", res.IsError, res.Content)
	}
}

// TestMCPStdioEmbedded: `cairn mcp --data DIR`, an embedded runtime behind
// MCP on stdio, driven by the Go SDK's client.
func TestMCPStdioEmbedded(t *testing.T) {
	data := t.TempDir()
	cmd := exec.Command(cairnBin, "mcp", "--data", data)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}
	cs, progress := mcpClient(t, &sdk.CommandTransport{Command: cmd})
	runDemo(t, cs, progress)
}

// TestMCPOverDevServer: the same turn through `cairn mcp --addr` (stdio,
// calling a dev server's API) and through the dev server's own /v1/mcp
// (Streamable HTTP, the bearer token as for every route).
func TestMCPOverDevServer(t *testing.T) {
	data := t.TempDir()
	_, url := launch(t, data, nil, "cairn dev listening on ", "mcp-test", "dev", "--data", data, "--addr", "127.0.0.1:0", "--token", "mcp-test")
	t.Run("stdio", func(t *testing.T) {
		cmd := exec.Command(cairnBin, "mcp", "--addr", url, "--token", "mcp-test")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		cs, progress := mcpClient(t, &sdk.CommandTransport{Command: cmd})
		runDemo(t, cs, progress)
	})
	t.Run("streamable-http", func(t *testing.T) {
		hc := &http.Client{Transport: bearer{"mcp-test"}}
		cs, progress := mcpClient(t, &sdk.StreamableClientTransport{Endpoint: url + "/v1/mcp", HTTPClient: hc, MaxRetries: -1})
		runDemo(t, cs, progress)
	})
	t.Run("wrong-token", func(t *testing.T) {
		hc := &http.Client{Transport: bearer{"not-it"}}
		client := sdk.NewClient(&sdk.Implementation{Name: "x", Version: "1"}, nil)
		if _, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url + "/v1/mcp", HTTPClient: hc, MaxRetries: -1}, nil); err == nil {
			t.Fatal("connected with a wrong token")
		}
	})
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPStdioTypeScriptClient: an independent client, the MCP TypeScript
// SDK's (npm), drives `cairn mcp`: lists the tools, runs a turn with
// progress, reads the result back.
func TestMCPStdioTypeScriptClient(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"package.json", "client.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "mcpclient", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install of the TypeScript SDK: %v\n%s", err, out)
	}
	data := t.TempDir()
	node := exec.Command("node", "client.mjs", cairnBin, data)
	node.Dir = dir
	node.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}
	out, err := node.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("the TypeScript client: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Tools    []string `json:"tools"`
		Progress []string `json:"progress"`
		Run      struct {
			IsError    bool `json:"isError"`
			Structured struct {
				Phase  string `json:"phase"`
				Done   bool   `json:"done"`
				Result string `json:"result"`
			} `json:"structuredContent"`
		} `json:"run"`
		Again string `json:"again"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the client's report: %v\n%s", err, out)
	}
	slices.Sort(got.Tools)
	if want := []string{"approve", "cancel", "get_result", "run_agent", "run_workflow"}; !slices.Equal(got.Tools, want) {
		t.Errorf("tools %v, want %v", got.Tools, want)
	}
	if got.Run.IsError || !got.Run.Structured.Done || got.Run.Structured.Phase != "COMMITTED" || got.Run.Structured.Result == "" {
		t.Fatalf("run_agent: %s", out)
	}
	if !slices.ContainsFunc(got.Progress, func(m string) bool { return strings.Contains(m, "running bash") }) {
		t.Errorf("no progress says bash runs: %q", got.Progress)
	}
	if !strings.Contains(got.Again, got.Run.Structured.Result) {
		t.Errorf("get_result's text %q lacks the result %q", got.Again, got.Run.Structured.Result)
	}
}

// TestMCPStdioServerInProcessSandbox: the reference server over stdio in a
// `process` sandbox (sandboxd starts it with npx in the workspace, as the
// commands' user): listed at the first model phase, a read-only call with
// structured content, an error result, a mutating call.
func TestMCPStdioServerInProcessSandbox(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	d := startDev(t, data, "--sandbox", "process")
	s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:call", MCP: []contracts.MCPServer{{Name: "every",
		Command: []string{"npx", "-y", mcptest.Everything, "stdio"}, InSandbox: true,
		Tools: []string{"echo", "get-structured-content", "get-resource-reference", "toggle-simulated-logging"}}}})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(prompt string) string {
		t.Helper()
		su, err := d.cl.Submit(ctx, s.ID, prompt, client.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := waitDone(t, ctx, d.cl, s.ID, su.ID); got.Phase != contracts.PhaseCommitted {
			t.Fatalf("turn %q: %s %s", prompt, got.Phase, got.Error)
		}
		tr := transcriptOf(t, ctx, d.cl, s.ID)
		return tr[len(tr)-2] // the turn's tool result
	}
	if r := turn(`mcp__every__echo {"message":"hi from a sandbox"}`); !strings.Contains(r, "Echo: hi from a sandbox") {
		t.Fatalf("echo: %s", r)
	}
	sandboxRecord(t, ctx, d, s.ID)
	sess, err := d.cl.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sess.MCP == nil || len(sess.MCP.Tools) != 4 || !slices.Equal(sess.MCP.Servers, []string{"every"}) {
		t.Fatalf("pin: %+v", sess.MCP)
	}
	if r := turn(`mcp__every__get-structured-content {"location":"Chicago"}`); !strings.Contains(r, "structured content: {") {
		t.Fatalf("structured: %s", r)
	}
	if r := turn(`mcp__every__get-resource-reference {"resourceType":"Text","resourceId":-1}`); !strings.Contains(r, "(err=true)") {
		t.Fatalf("an error result: %s", r)
	}
	if r := turn(`mcp__every__toggle-simulated-logging {}`); !strings.Contains(strings.ToLower(r), "logging") {
		t.Fatalf("a mutating call: %s", r)
	}
}
