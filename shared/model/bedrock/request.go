package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// emptyResult stands in for a tool result without output: Converse rejects
// a blank text block.
const emptyResult = "(no output)"

// buildInput maps a ModelRequest onto a ConverseStream request: the system
// prompt, the transcript as alternating user/assistant messages, the tools
// and the output token cap.
func buildInput(req contracts.ModelRequest, maxTokens int) (*bedrockruntime.ConverseStreamInput, error) {
	if req.Model == "" {
		return nil, errors.New("no model id")
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return nil, err
	}
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	in := &bedrockruntime.ConverseStreamInput{
		ModelId:         aws.String(req.Model),
		Messages:        msgs,
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(min(maxTokens, math.MaxInt32)))},
	}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	if len(req.Tools) > 0 {
		cfg := &types.ToolConfiguration{}
		for _, t := range req.Tools {
			schema, err := toDocument(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("input schema of tool %s: %w", t.Name, err)
			}
			spec := types.ToolSpecification{Name: aws.String(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}
			if t.Description != "" {
				spec.Description = aws.String(t.Description)
			}
			cfg.Tools = append(cfg.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
		in.ToolConfig = cfg
	}
	return in, nil
}

// messages maps transcript nodes to Converse messages. Tool nodes become
// user messages of toolResult blocks; consecutive messages of the same role
// are merged, since Converse requires user and assistant to alternate; nodes
// left without content (an empty answer) are dropped, since Converse rejects
// empty messages and blank text.
func messages(nodes []contracts.Node) ([]types.Message, error) {
	var out []types.Message
	for _, n := range nodes {
		role := types.ConversationRoleUser
		if n.Role == contracts.RoleAssistant {
			role = types.ConversationRoleAssistant
		}
		var content []types.ContentBlock
		for _, b := range n.Blocks {
			c, err := block(b)
			if err != nil {
				return nil, fmt.Errorf("transcript node %s: %w", n.ID, err)
			}
			if c != nil {
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
		out = append(out, types.Message{Role: role, Content: content})
	}
	return out, nil
}

// block maps one content block; nil for a block Converse has no use for.
func block(b contracts.Block) (types.ContentBlock, error) {
	switch b.Type {
	case contracts.BlockText:
		if b.Text == "" {
			return nil, nil
		}
		return &types.ContentBlockMemberText{Value: b.Text}, nil
	case contracts.BlockToolUse:
		if b.ToolCall == nil {
			return nil, errors.New("tool_use block without a tool call")
		}
		input, err := toDocument(b.ToolCall.Input)
		if err != nil {
			return nil, fmt.Errorf("input of tool call %s: %w", b.ToolCall.ID, err)
		}
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(b.ToolCall.ID), Name: aws.String(b.ToolCall.Name), Input: input,
		}}, nil
	case contracts.BlockToolResult:
		r := b.ToolResult
		if r == nil {
			return nil, errors.New("tool_result block without a result")
		}
		text := r.Content
		if text == "" {
			text = emptyResult
		}
		res := types.ToolResultBlock{
			ToolUseId: aws.String(r.CallID),
			Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}},
		}
		if r.IsError {
			res.Status = types.ToolResultStatusError
		}
		return &types.ContentBlockMemberToolResult{Value: res}, nil
	}
	return nil, nil
}

// toDocument turns JSON into a Smithy document (empty → {}). Numbers are
// kept exact: the SDK's document encoder writes json.Number as a string, so
// they become int64, big.Int or float64 instead.
func toDocument(raw json.RawMessage) (document.Interface, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return document.NewLazyDocument(map[string]any{}), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return document.NewLazyDocument(numbers(v)), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if b, ok := new(big.Int).SetString(string(x), 10); ok {
			return b
		}
		f, _ := x.Float64()
		return f
	}
	return v
}
