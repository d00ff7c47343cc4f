package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/cairnrun/cairn/shared/contracts"
)

// ToolErrorPrefix starts the content of a `tool` message whose result is an
// error: Chat Completions has no is_error flag, so the model learns of the
// failure from the text.
const ToolErrorPrefix = "ERROR: "

// params maps one model step onto a Chat Completions request: the system
// prompt, the transcript path, the tools and the token limit. Streaming and
// include_usage are always on. An unusable request wraps
// contracts.ErrInvalid.
func (c *Client) params(req contracts.ModelRequest) (oai.ChatCompletionNewParams, error) {
	var p oai.ChatCompletionNewParams
	if req.Model == "" {
		return p, fmt.Errorf("model name is empty: %w", contracts.ErrInvalid)
	}
	p.Model = shared.ChatModel(req.Model)
	p.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	if req.System != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.System))
	}
	for _, n := range req.Messages {
		p.Messages = append(p.Messages, messages(n)...)
	}
	for _, s := range req.Tools {
		t, err := tool(s)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, t)
	}
	limit := req.MaxTokens
	if limit == 0 {
		limit = c.cfg.MaxTokens
	}
	if limit > 0 {
		// OpenAI's reasoning models refuse max_tokens; the servers behind
		// other base URLs (vLLM, Ollama, LiteLLM) all understand it.
		if c.openAI {
			p.MaxCompletionTokens = param.NewOpt(int64(limit))
		} else {
			p.MaxTokens = param.NewOpt(int64(limit))
		}
	}
	return p, nil
}

// messages maps one transcript node: a user node to a user message, an
// assistant node to one assistant message (text and tool_calls), and every
// tool_result block — whatever node holds it — to its own `tool` message.
func messages(n contracts.Node) []oai.ChatCompletionMessageParamUnion {
	var (
		out   []oai.ChatCompletionMessageParamUnion
		text  []string
		calls []oai.ChatCompletionMessageToolCallUnionParam
	)
	for _, b := range n.Blocks {
		switch b.Type {
		case contracts.BlockText:
			text = append(text, b.Text)
		case contracts.BlockToolUse:
			if b.ToolCall != nil {
				calls = append(calls, toolCall(*b.ToolCall))
			}
		case contracts.BlockToolResult:
			if r := b.ToolResult; r != nil {
				content := r.Content
				if r.IsError {
					content = ToolErrorPrefix + content
				}
				out = append(out, oai.ToolMessage(content, r.CallID))
			}
		}
	}
	joined := strings.Join(text, "")
	switch n.Role {
	case contracts.RoleAssistant:
		var a oai.ChatCompletionAssistantMessageParam
		// content may be omitted only when tool_calls carry the turn.
		if joined != "" || len(calls) == 0 {
			a.Content.OfString = param.NewOpt(joined)
		}
		a.ToolCalls = calls
		return append([]oai.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, out...)
	case contracts.RoleUser:
		if len(text) > 0 || len(out) == 0 {
			return append([]oai.ChatCompletionMessageParamUnion{oai.UserMessage(joined)}, out...)
		}
	}
	return out
}

func toolCall(tc contracts.ToolCall) oai.ChatCompletionMessageToolCallUnionParam {
	args := string(tc.Input)
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	return oai.ChatCompletionMessageToolCallUnionParam{OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
		ID:       tc.ID,
		Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
	}}
}

// tool maps a ToolSpec to a function tool whose parameters are its JSON
// Schema (an empty schema becomes an object without properties).
func tool(s contracts.ToolSpec) (oai.ChatCompletionToolUnionParam, error) {
	schema := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	if len(s.InputSchema) > 0 {
		schema = nil
		if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema == nil {
			return oai.ChatCompletionToolUnionParam{}, fmt.Errorf("input schema of tool %s is not a JSON object: %w", s.Name, contracts.ErrInvalid)
		}
	}
	fn := shared.FunctionDefinitionParam{Name: s.Name, Parameters: schema}
	if s.Description != "" {
		fn.Description = param.NewOpt(s.Description)
	}
	return oai.ChatCompletionFunctionTool(fn), nil
}
