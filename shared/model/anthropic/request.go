package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/cairnrun/cairn/shared/contracts"
)

// newParams maps a model step onto a Messages API request. A request that
// can never be sent as is wraps contracts.ErrInvalid.
func newParams(req contracts.ModelRequest, defaultMaxTokens int) (sdk.MessageNewParams, error) {
	if req.Model == "" {
		return sdk.MessageNewParams{}, fmt.Errorf("no model name: %w", contracts.ErrInvalid)
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	tools, err := toolParams(req.Tools)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	p := sdk.MessageNewParams{
		Model:     req.Model,
		MaxTokens: int64(defaultMaxTokens),
		Messages:  msgs,
		Tools:     tools,
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	return p, nil
}

// messages maps the transcript path: user nodes and tool nodes become user
// messages, assistant nodes assistant messages. Consecutive nodes of the
// same API role merge into one message (a tool node's results and a
// following prompt), with tool_result blocks first as the API requires.
// Nodes without content are skipped: the API rejects empty messages and
// empty text blocks.
func messages(nodes []contracts.Node) ([]sdk.MessageParam, error) {
	var out []sdk.MessageParam
	for _, n := range nodes {
		var role sdk.MessageParamRole
		switch n.Role {
		case contracts.RoleUser, contracts.RoleTool:
			role = sdk.MessageParamRoleUser
		case contracts.RoleAssistant:
			role = sdk.MessageParamRoleAssistant
		default:
			return nil, fmt.Errorf("transcript node %s has unknown role %q: %w", n.ID, n.Role, contracts.ErrInvalid)
		}
		var content []sdk.ContentBlockParamUnion
		for i, b := range n.Blocks {
			c, ok, err := contentBlock(b)
			if err != nil {
				return nil, fmt.Errorf("transcript node %s block %d: %w", n.ID, i, err)
			}
			if ok {
				content = append(content, c)
			}
		}
		if len(content) == 0 {
			continue
		}
		if last := len(out) - 1; last >= 0 && out[last].Role == role {
			out[last].Content = append(out[last].Content, content...)
			continue
		}
		out = append(out, sdk.MessageParam{Role: role, Content: content})
	}
	for i := range out {
		slices.SortStableFunc(out[i].Content, func(a, b sdk.ContentBlockParamUnion) int {
			return resultRank(a) - resultRank(b)
		})
	}
	return out, nil
}

func resultRank(c sdk.ContentBlockParamUnion) int {
	if c.OfToolResult != nil {
		return 0
	}
	return 1
}

// contentBlock maps one block; ok is false for a block with nothing to send.
func contentBlock(b contracts.Block) (c sdk.ContentBlockParamUnion, ok bool, err error) {
	switch b.Type {
	case contracts.BlockText:
		if b.Text == "" {
			return c, false, nil
		}
		return sdk.NewTextBlock(b.Text), true, nil
	case contracts.BlockToolUse:
		if b.ToolCall == nil || b.ToolCall.ID == "" || b.ToolCall.Name == "" {
			return c, false, fmt.Errorf("tool_use block without a call id and name: %w", contracts.ErrInvalid)
		}
		return sdk.NewToolUseBlock(b.ToolCall.ID, objectOrEmpty(b.ToolCall.Input), b.ToolCall.Name), true, nil
	case contracts.BlockToolResult:
		r := b.ToolResult
		if r == nil || r.CallID == "" {
			return c, false, fmt.Errorf("tool_result block without a call id: %w", contracts.ErrInvalid)
		}
		tr := sdk.ToolResultBlockParam{ToolUseID: r.CallID}
		if r.Content != "" { // an empty text block is rejected; no content is not
			tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: r.Content}}}
		}
		if r.IsError {
			tr.IsError = sdk.Bool(true)
		}
		return sdk.ContentBlockParamUnion{OfToolResult: &tr}, true, nil
	default:
		return c, false, fmt.Errorf("unknown block type %q: %w", b.Type, contracts.ErrInvalid)
	}
}

// objectOrEmpty returns a tool call's input as sent back to the API, which
// requires a JSON object.
func objectOrEmpty(in json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(in)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return json.RawMessage(`{}`)
	}
	return t
}

// toolParams maps tool specs; input_schema is the spec's JSON Schema, its
// properties and required lifted into the SDK's fields and every other
// keyword (additionalProperties, $defs, …) kept as is.
func toolParams(specs []contracts.ToolSpec) ([]sdk.ToolUnionParam, error) {
	out := make([]sdk.ToolUnionParam, 0, len(specs))
	for _, s := range specs {
		schema, err := inputSchema(s.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", s.Name, err)
		}
		t := sdk.ToolParam{Name: s.Name, InputSchema: schema}
		if s.Description != "" {
			t.Description = sdk.String(s.Description)
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &t})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// An SDK quirk: a zero ToolInputSchemaParam is omitted from the request
// (omitzero), though the API requires input_schema; a schema without
// properties therefore gets an empty "properties".
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	s := sdk.ToolInputSchemaParam{Properties: map[string]any{}}
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return s, fmt.Errorf("input schema is not a JSON object: %w", contracts.ErrInvalid)
	}
	if t, ok := m["type"]; ok && t != "object" {
		return s, fmt.Errorf("input schema type %v, the API requires \"object\": %w", t, contracts.ErrInvalid)
	}
	delete(m, "type")
	if p, ok := m["properties"]; ok && p != nil {
		s.Properties = p
		delete(m, "properties")
	}
	if r, ok := m["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return s, fmt.Errorf("input schema \"required\" is not a list: %w", contracts.ErrInvalid)
		}
		for _, v := range list {
			name, ok := v.(string)
			if !ok {
				return s, fmt.Errorf("input schema \"required\" holds a non-string: %w", contracts.ErrInvalid)
			}
			s.Required = append(s.Required, name)
		}
		delete(m, "required")
	}
	if len(m) > 0 {
		s.ExtraFields = m
	}
	return s, nil
}
