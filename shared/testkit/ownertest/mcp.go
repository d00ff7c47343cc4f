package ownertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// MCPRoute is cairn's MCP endpoint: one route whose tools reach records by
// the ids in their arguments, so its owner check is the tools': B calling
// get_result on A's turn gets the API's 404 as a tool error.
const MCPRoute = "POST /v1/mcp"

// checkMCP calls get_result on A's parked turn over /v1/mcp as each caller.
func checkMCP(t *testing.T, tg Target, a records) {
	t.Helper()
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "get_result", "arguments": map[string]any{"session_id": a.session, "submission_id": a.submission, "wait_seconds": 1}}})
	if st, raw := tg.Do(t, Nobody, http.MethodPost, "/v1/mcp", call); st != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d %s, want 401", st, clip(raw))
	}
	for _, c := range []Caller{A, B, Operator} {
		st, raw := tg.Do(t, c, http.MethodPost, "/v1/mcp", call)
		if st != http.StatusOK {
			t.Fatalf("%s: POST /v1/mcp get_result: %d %s", c, st, clip(raw))
		}
		res, err := mcpResult(raw)
		if err != nil {
			t.Fatalf("%s: POST /v1/mcp get_result: %v: %s", c, err, clip(raw))
		}
		switch c {
		case B:
			if !res.IsError || !strings.Contains(res.text(), "404 not_found") {
				t.Fatalf("B's get_result on A's turn: %s, want a tool error with the API's 404 not_found", clip(raw))
			}
		default: // A owns it; the operator may read it
			if res.IsError || len(res.Structured.Approvals) != 1 {
				t.Fatalf("%s's get_result on A's parked turn: %s, want its one approval", c, clip(raw))
			}
		}
	}
}

type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Structured struct {
		Approvals []json.RawMessage `json:"approvals"`
	} `json:"structuredContent"`
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// mcpResult is the tool result in a Streamable HTTP answer: one JSON-RPC
// response, as JSON or as the last data line of an event stream.
func mcpResult(raw []byte) (toolResult, error) {
	body := raw
	if i := bytes.LastIndex(raw, []byte("data: ")); i >= 0 {
		body, _, _ = bytes.Cut(raw[i+len("data: "):], []byte("\n"))
	}
	var resp struct {
		Result *toolResult      `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return toolResult{}, err
	}
	if resp.Result == nil {
		return toolResult{}, fmt.Errorf("no result (error %s)", string(deref(resp.Error)))
	}
	return *resp.Result, nil
}

func deref(p *json.RawMessage) []byte {
	if p == nil {
		return nil
	}
	return *p
}
