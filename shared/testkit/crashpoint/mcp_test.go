package crashpoint_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/crashpoint"
	"github.com/cairnrun/cairn/shared/tools"
)

// The MCP scenario's server and tool: the model sees the tool as
// mcp__<mcpServerName>__<mcpTool>.
const (
	mcpServerName = "crash"
	mcpTool       = "append"
	mcpPrompt     = "mcp__" + mcpServerName + "__" + mcpTool + ` {"line":"crash"}`
)

// mcpServer is a real MCP server (the official SDK's, in process, over
// real HTTP) with one mutating tool, append: it records every call it
// receives under the session id and with the effect id its _meta names, so
// runs that overlap on one server are told apart.
type mcpServer struct {
	url string

	mu       sync.Mutex
	sessions map[string][]string // session id ("" if _meta names none) → the effect id of each call received, in order
}

// startMCPServer starts the server; it is closed (its handlers waited
// for) when t ends, after t's subtests.
func startMCPServer(t *testing.T) *mcpServer {
	t.Helper()
	m := &mcpServer{sessions: map[string][]string{}}
	srv := sdk.NewServer(&sdk.Implementation{Name: "crash", Version: "1"}, nil)
	type in struct {
		Line string `json:"line"`
	}
	// No readOnlyHint: cairn treats the tool as mutating.
	sdk.AddTool(srv, &sdk.Tool{Name: mcpTool, Description: "Appends a line to the server's log (a side effect: call at most once)."},
		func(_ context.Context, req *sdk.CallToolRequest, v in) (*sdk.CallToolResult, any, error) {
			session, _ := req.Params.Meta[tools.MetaSessionID].(string)
			effect, _ := req.Params.Meta[tools.MetaEffectID].(string)
			m.mu.Lock()
			m.sessions[session] = append(m.sessions[session], effect)
			m.mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "appended " + v.Line}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	m.url = hs.URL
	t.Cleanup(func() {
		hs.Close()
		m.mu.Lock()
		defer m.mu.Unlock()
		if lost := m.sessions[""]; len(lost) > 0 {
			t.Errorf("the MCP server got %d calls without %s in _meta (effect ids %q): no run counted them", len(lost), tools.MetaSessionID, lost)
		}
	})
	return m
}

// spec is the session's MCP server list.
func (m *mcpServer) spec() []contracts.MCPServer {
	return []contracts.MCPServer{{Name: mcpServerName, URL: m.url}}
}

// calls returns the effect ids of the calls the session's turns sent.
func (m *mcpServer) calls(sessionID string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.sessions[sessionID]...)
}

// check flags an MCP call sent twice, or not sent while nothing was
// interrupted; an interrupted call may have been sent once or not at all.
func TestCheckFlagsMCPCalls(t *testing.T) {
	i := slices.IndexFunc(scenarios, func(sc scenario) bool { return sc.mcp })
	if i < 0 {
		t.Fatal("no MCP scenario in the matrix")
	}
	sc := scenarios[i]
	tr := []string{"user: text=x", "assistant: text=a", "tool: result=appended crash", "assistant: text=b"}
	ref := outcome{phase: sc.want, calls: 2, transcript: tr, mcpCalls: []string{"eff"}}
	if probs, _ := check(sc, ref, ref); len(probs) != 0 {
		t.Fatalf("reference flagged: %v", probs)
	}
	interrupted := slices.Clone(tr)
	interrupted[2] = "tool: result=interrupted(error)"
	for _, c := range []struct {
		name       string
		transcript []string
		sent       []string
		flagged    bool
	}{
		{"twice", tr, []string{"eff", "eff"}, true},
		{"twice, new effect id", tr, []string{"eff", "eff2"}, true},
		{"never", tr, nil, true},
		{"interrupted, twice", interrupted, []string{"eff", "eff"}, true},
		{"interrupted, once", interrupted, []string{"eff"}, false},
		{"interrupted, never", interrupted, nil, false},
	} {
		got := ref
		got.transcript, got.mcpCalls = c.transcript, c.sent
		if probs, _ := check(sc, ref, got); (len(probs) > 0) != c.flagged {
			t.Errorf("%s: problems %q, want flagged %v", c.name, probs, c.flagged)
		}
	}
}

// callWrites picks the call's own writes, alone or in a batch.
func TestCallWrites(t *testing.T) {
	pts := []crashpoint.Point{
		{N: 1, Op: "UpdateSubmission", Key: "sub"},
		{N: 2, Op: "MarkToolStarted", Key: "sub/0/call_0_0"},
		{N: 3, Op: "AppendEvents", Key: "tool_started/0/call_0_0"},
		{N: 4, Op: "Batch", Key: "MarkToolStarted,AppendEvents"},
		{N: 5, Op: "PutToolResult", Key: "sub/0/call_0_0"},
		{N: 6, Op: "AppendEvents", Key: "tool_finished/0/call_0_0"},
		{N: 7, Op: "PutNode", Key: "nd_sub_0_tool"},
		{N: 8, Op: "Batch", Key: "PutToolResult,AppendEvents,PutNode"},
		{N: 9, Op: "AppendEvents", Key: "step/1"},
		{N: 10, Op: "Batch", Key: "PutChunks,AppendEvents,Complete"},
	}
	if got, want := callWrites(pts), []int{2, 3, 4, 5, 6, 8}; !slices.Equal(got, want) {
		t.Fatalf("callWrites = %v, want %v", got, want)
	}
}
