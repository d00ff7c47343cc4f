package backend_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked()
	os.Exit(m.Run())
}

// TestStdioMCPServerOnTheServerlessShape: the model function places no
// sandboxes (as deployed: Serves without Sandboxes), so a session's stdio
// server is listed by the tools function — the model phase hands it the
// turn over SQS and gets it back — and called there.
func TestStdioMCPServerOnTheServerlessShape(t *testing.T) {
	s := newStack(t, 2*time.Second, 5, nil)
	modelCfg := s.cfg
	modelCfg.Serves = backend.Serves{} // the model function's sandboxes: checks only
	modelRT, err := backend.New(awstest.Context(t), modelCfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, fn := range s.harness.Functions {
		if fn.Queue == contracts.QueueModel {
			s.harness.Functions[i].Handler = lambdafn.SQSHandler(contracts.QueueModel, modelRT.Engine.Handle, nil)
		}
	}
	code, sess := s.call("POST", "/v1/sessions", contracts.SessionSpec{Model: "scripted:call", MCP: []contracts.MCPServer{{Name: "kit",
		Command: []string{"./kit-server", mcptest.StdioArg}, InSandbox: true, Tools: []string{"append"}}}}, nil)
	if code != http.StatusCreated {
		t.Fatalf("create session: %d %v", code, sess)
	}
	sid := sess["id"].(string)
	// The server is this test binary, in the workspace.
	ws := filepath.Join(s.cfg.SandboxDir, sid)
	mcptest.InstallStdio(t, ws, "kit-server")
	t.Cleanup(func() { _ = s.rt.Ports.Sandboxes.Release(context.Background(), sid) })
	code, su := s.call("POST", "/v1/sessions/"+sid+"/submissions", map[string]string{"prompt": `mcp__kit__append {"line":"from lambda"}`}, nil)
	if code != http.StatusAccepted {
		t.Fatalf("submit: %d %v", code, su)
	}
	got := s.until(su["id"].(string), 60*time.Second)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s: %s", got.Phase, got.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "mcp-log.txt")); string(b) != "from lambda\n" {
		t.Fatalf("mcp-log.txt %q, want the call made once", b)
	}
	pinned, err := s.rt.Ports.Journal.GetSession(context.Background(), sid)
	if err != nil || pinned.MCP == nil || len(pinned.MCP.Tools) != 1 || pinned.MCP.Tools[0].Name != "mcp__kit__append" {
		t.Fatalf("pin: %+v %v", pinned.MCP, err)
	}
	if tr := strings.Join(s.transcript(sid), "\n"); !strings.Contains(tr, "appended") {
		t.Fatalf("transcript:\n%s", tr)
	}
}
