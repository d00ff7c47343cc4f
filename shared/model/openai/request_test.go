package openai

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

func node(role contracts.Role, blocks ...contracts.Block) contracts.Node {
	return contracts.Node{Role: role, Blocks: blocks}
}

func textBlock(s string) contracts.Block { return contracts.Block{Type: contracts.BlockText, Text: s} }

func use(id, name, input string) contracts.Block {
	return contracts.Block{Type: contracts.BlockToolUse, ToolCall: &contracts.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}}
}

func result(id, content string, isErr bool) contracts.Block {
	return contracts.Block{Type: contracts.BlockToolResult, ToolResult: &contracts.ToolResult{CallID: id, Content: content, IsError: isErr}}
}

func TestParamsMapsTheTranscript(t *testing.T) {
	c, err := New(Config{BaseURL: "http://localhost:11434/v1", MaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	req := contracts.ModelRequest{
		Model:  "qwen3:8b",
		System: "Be brief.",
		Messages: []contracts.Node{
			node(contracts.RoleUser, textBlock("list the files")),
			node(contracts.RoleAssistant, textBlock("Looking."), use("call_1", "list_dir", `{"path":"."}`), use("call_2", "glob", "")),
			node(contracts.RoleTool, result("call_1", "a.txt\nb.txt", false), result("call_2", "bad pattern", true)),
			node(contracts.RoleAssistant, use("call_3", "read_file", `{"path":"a.txt"}`)),
			node(contracts.RoleTool, result("call_3", "", false)),
			node(contracts.RoleAssistant, textBlock("Two "), textBlock("files.")),
			node(contracts.RoleUser, textBlock("thanks")),
			node(contracts.RoleAssistant),
		},
		Tools: []contracts.ToolSpec{
			{Name: "list_dir", Description: "List a directory.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "now"},
		},
		MaxTokens: 512,
	}
	p, err := c.params(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
		"model": "qwen3:8b",
		"messages": [
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": "list the files"},
			{"role": "assistant", "content": "Looking.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": "{\"path\":\".\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "glob", "arguments": "{}"}}]},
			{"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"},
			{"role": "tool", "tool_call_id": "call_2", "content": "ERROR: bad pattern"},
			{"role": "assistant", "tool_calls": [
				{"id": "call_3", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}]},
			{"role": "tool", "tool_call_id": "call_3", "content": ""},
			{"role": "assistant", "content": "Two files."},
			{"role": "user", "content": "thanks"},
			{"role": "assistant", "content": ""}
		],
		"tools": [
			{"type": "function", "function": {"name": "list_dir", "description": "List a directory.",
				"parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
			{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
		],
		"stream_options": {"include_usage": true},
		"max_tokens": 512
	}`
	assertJSON(t, p, want)
}

func TestParamsTokenLimit(t *testing.T) {
	key := func(context.Context) (string, error) { return "k", nil }
	cases := []struct {
		name     string
		cfg      Config
		req, def int
		field    string // the field that must carry the limit, "" = none
		want     float64
	}{
		{name: "request limit to a local server", cfg: Config{BaseURL: "http://vllm:8000/v1"}, req: 300, field: "max_tokens", want: 300},
		{name: "config default", cfg: Config{BaseURL: "http://vllm:8000/v1"}, def: 700, field: "max_tokens", want: 700},
		{name: "request wins over config", cfg: Config{BaseURL: "http://vllm:8000/v1"}, req: 300, def: 700, field: "max_tokens", want: 300},
		{name: "none", cfg: Config{BaseURL: "http://vllm:8000/v1"}},
		{name: "OpenAI default base URL", cfg: Config{Key: key}, req: 300, field: "max_completion_tokens", want: 300},
		{name: "OpenAI explicit base URL", cfg: Config{Key: key, BaseURL: "https://api.openai.com/v1"}, def: 64, field: "max_completion_tokens", want: 64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.MaxTokens = tc.def
			c, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.params(contracts.ModelRequest{Model: "m", MaxTokens: tc.req})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(p)
			var got map[string]any
			_ = json.Unmarshal(b, &got)
			for _, f := range []string{"max_tokens", "max_completion_tokens"} {
				if want := f == tc.field; (got[f] != nil) != want || (want && got[f] != tc.want) {
					t.Fatalf("%s = %v in %s", f, got[f], b)
				}
			}
		})
	}
}

func TestInvalidRequestsAndConfigs(t *testing.T) {
	c, err := New(Config{BaseURL: "http://localhost:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]contracts.ModelRequest{
		"no model":   {},
		"bad schema": {Model: "m", Tools: []contracts.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}},
	} {
		_, err := c.Stream(context.Background(), req, func(contracts.ModelEvent) error { return nil })
		if !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for name, cfg := range map[string]Config{
		"OpenAI without a key": {},
		"not a URL":            {BaseURL: "localhost:11434"},
		"ftp":                  {BaseURL: "ftp://example.com/v1"},
	} {
		if _, err := New(cfg); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	empty, _ := New(Config{Key: func(context.Context) (string, error) { return "", nil }})
	if _, err := empty.Stream(context.Background(), contracts.ModelRequest{Model: "m"}, nil); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("empty key for OpenAI: %v, want ErrInvalid", err)
	}
	failing, _ := New(Config{Key: func(context.Context) (string, error) { return "", errors.New("secret store down") }})
	if _, err := failing.Stream(context.Background(), contracts.ModelRequest{Model: "m"}, nil); err == nil || errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("key lookup failure: %v, want a retryable error", err)
	}
}

func assertJSON(t *testing.T, v any, want string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got, exp any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("bad expectation: %v", err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}
