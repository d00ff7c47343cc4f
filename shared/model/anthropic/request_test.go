package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

func text(s string) contracts.Block { return contracts.Block{Type: contracts.BlockText, Text: s} }

func use(id, name, input string) contracts.Block {
	return contracts.Block{Type: contracts.BlockToolUse, ToolCall: &contracts.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}}
}

func result(id, content string, isErr bool) contracts.Block {
	return contracts.Block{Type: contracts.BlockToolResult, ToolResult: &contracts.ToolResult{CallID: id, Content: content, IsError: isErr}}
}

func node(role contracts.Role, blocks ...contracts.Block) contracts.Node {
	return contracts.Node{ID: "n_" + string(role), Role: role, Blocks: blocks}
}

// sameJSON compares two JSON documents by value.
func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON: %v", err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("got\n%s\nwant\n%s", gb, wb)
	}
}

func TestRequestMapping(t *testing.T) {
	req := contracts.ModelRequest{
		Model:     "claude-sonnet-4-5",
		System:    "Be brief.",
		MaxTokens: 1000,
		Messages: []contracts.Node{
			node(contracts.RoleUser, text("list and read")),
			node(contracts.RoleAssistant, text("Looking."), use("toolu_1", "read_file", `{ "path": "a.txt" }`), use("toolu_2", "list_dir", "")),
			node(contracts.RoleTool, result("toolu_1", "alpha", false), result("toolu_2", "", true)),
			node(contracts.RoleUser, text(""), text("and now?")), // a prompt after tool results joins their message
			node(contracts.RoleAssistant), // nothing to send: skipped
			node(contracts.RoleAssistant, text("Done.")),
		},
		Tools: []contracts.ToolSpec{
			{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false,"$defs":{}}`)},
			{Name: "list_dir", InputSchema: nil},
		},
	}
	p, err := newParams(req, 8192)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, got, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 1000,
		"system": [{"type": "text", "text": "Be brief."}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "list and read"}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Looking."},
				{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
				{"type": "tool_use", "id": "toolu_2", "name": "list_dir", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "alpha"}]},
				{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true},
				{"type": "text", "text": "and now?"}
			]},
			{"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
		],
		"tools": [
			{"name": "read_file", "description": "Read a file.", "input_schema": {
				"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
				"additionalProperties": false, "$defs": {}
			}},
			{"name": "list_dir", "input_schema": {"type": "object", "properties": {}}}
		]
	}`)
}

func TestRequestMappingDefaults(t *testing.T) {
	p, err := newParams(contracts.ModelRequest{Model: "m", Messages: []contracts.Node{node(contracts.RoleUser, text("hi"))}}, 8192)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p)
	sameJSON(t, got, `{"model": "m", "max_tokens": 8192, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}`)
}

// Tool results always lead their user message, even when the transcript
// put a prompt first.
func TestToolResultsLeadTheirMessage(t *testing.T) {
	msgs, err := messages([]contracts.Node{
		node(contracts.RoleAssistant, use("t1", "bash", `{}`)),
		node(contracts.RoleUser, text("wait")),
		node(contracts.RoleTool, result("t1", "ok", false)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || len(msgs[1].Content) != 2 || msgs[1].Content[0].OfToolResult == nil || msgs[1].Content[1].OfText == nil {
		got, _ := json.Marshal(msgs)
		t.Fatalf("messages %s", got)
	}
}

func TestRequestMappingRejects(t *testing.T) {
	user := []contracts.Node{node(contracts.RoleUser, text("hi"))}
	for _, tc := range []struct {
		name string
		req  contracts.ModelRequest
	}{
		{"no model", contracts.ModelRequest{Messages: user}},
		{"unknown role", contracts.ModelRequest{Model: "m", Messages: []contracts.Node{node("system", text("x"))}}},
		{"unknown block", contracts.ModelRequest{Model: "m", Messages: []contracts.Node{node(contracts.RoleUser, contracts.Block{Type: "image"})}}},
		{"tool_use without call", contracts.ModelRequest{Model: "m", Messages: []contracts.Node{node(contracts.RoleAssistant, contracts.Block{Type: contracts.BlockToolUse})}}},
		{"tool_use without id", contracts.ModelRequest{Model: "m", Messages: []contracts.Node{node(contracts.RoleAssistant, use("", "bash", `{}`))}}},
		{"tool_result without id", contracts.ModelRequest{Model: "m", Messages: []contracts.Node{node(contracts.RoleTool, result("", "x", false))}}},
		{"schema not an object", contracts.ModelRequest{Model: "m", Messages: user, Tools: []contracts.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`[1]`)}}}},
		{"schema of type string", contracts.ModelRequest{Model: "m", Messages: user, Tools: []contracts.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":"string"}`)}}}},
		{"schema required not a list", contracts.ModelRequest{Model: "m", Messages: user, Tools: []contracts.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"required":"a"}`)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := newParams(tc.req, 10); !errors.Is(err, contracts.ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
		})
	}
}
