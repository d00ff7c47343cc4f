package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/cairnrun/cairn/shared/contracts"
)

// streamOnce makes one request and reads its stream to the end.
func (c *Client) streamOnce(ctx context.Context, p oai.ChatCompletionNewParams, key string, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	var res *http.Response
	opts := []option.RequestOption{option.WithResponseInto(&res)}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	s := c.chat.NewStreaming(ctx, p, opts...)
	defer s.Close()
	var a assembler
	for s.Next() {
		if err := a.add(s.Current(), emit); err != nil {
			return a.resp, err
		}
	}
	if err := s.Err(); err != nil {
		return a.resp, describe(err, res, key)
	}
	if a.finish == "" {
		return a.resp, fmt.Errorf("chat completion stream ended without a finish_reason: %w", io.ErrUnexpectedEOF)
	}
	return a.resp, a.done(emit)
}

// assembler turns chunks into events and the response. Tool calls are
// assembled from deltas keyed by index (id and name first, then argument
// fragments split anywhere) and emitted once the stream finished.
type assembler struct {
	resp    contracts.ModelResponse
	calls   []*call       // in order of first appearance
	byIndex map[int64]int // delta index → position in calls
	finish  string        // finish_reason of choice 0, "" until seen
	usage   bool          // a usage object was received
}

type call struct {
	index    int64
	id, name string
	args     strings.Builder
}

func (a *assembler) add(ch oai.ChatCompletionChunk, emit func(contracts.ModelEvent) error) error {
	if ch.JSON.Usage.Valid() {
		// the final chunk (choices: []); some servers repeat it on every chunk
		a.usage = true
		a.resp.Usage = contracts.Usage{InputTokens: int(ch.Usage.PromptTokens), OutputTokens: int(ch.Usage.CompletionTokens)}
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // n is never set: other choices are not ours
		}
		d := choice.Delta
		// a refusal is what the model answered instead of content
		for _, text := range []string{d.Content, d.Refusal} {
			if text == "" {
				continue
			}
			a.resp.Text += text
			if err := emit(contracts.ModelEvent{Type: contracts.ModelText, Text: text}); err != nil {
				return err
			}
		}
		for _, tc := range d.ToolCalls {
			a.toolDelta(tc)
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
		}
	}
	return nil
}

func (a *assembler) toolDelta(tc oai.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.byIndex == nil {
		a.byIndex = map[int64]int{}
	}
	pos, ok := a.byIndex[tc.Index]
	// Some proxies number every call 0; a new id at a known index is a new call.
	if !ok || (tc.ID != "" && a.calls[pos].id != "" && tc.ID != a.calls[pos].id) {
		pos = len(a.calls)
		a.byIndex[tc.Index] = pos
		a.calls = append(a.calls, &call{index: tc.Index})
	}
	cl := a.calls[pos]
	if cl.id == "" {
		cl.id = tc.ID
	}
	if cl.name == "" {
		cl.name = tc.Function.Name
	}
	cl.args.WriteString(tc.Function.Arguments)
}

// done emits the assembled tool calls and the usage, and sets StopReason.
func (a *assembler) done(emit func(contracts.ModelEvent) error) error {
	for i, cl := range a.calls {
		tc := contracts.ToolCall{ID: cl.id, Name: cl.name, Input: arguments(cl.args.String())}
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_%d", i) // Ollama-style servers may omit ids
		}
		if err := emit(contracts.ModelEvent{Type: contracts.ModelToolCall, ToolCall: &tc}); err != nil {
			return err
		}
		a.resp.ToolCalls = append(a.resp.ToolCalls, tc)
	}
	if a.usage {
		u := a.resp.Usage
		if err := emit(contracts.ModelEvent{Type: contracts.ModelUsage, Usage: &u}); err != nil {
			return err
		}
	}
	a.resp.StopReason = stopReason(a.finish, len(a.calls) > 0)
	return nil
}

// arguments makes a tool call's input valid JSON: "" → {}, and text that is
// not JSON (a call cut by max_tokens) → a JSON string, which fails the
// tool's schema check so the model sees the error.
func arguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// stopReason maps finish_reason to the contracts' stop reasons; unknown
// reasons (content_filter, …) are kept as they are.
func stopReason(finish string, calls bool) string {
	switch finish {
	case "tool_calls", "function_call":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "stop":
		if calls {
			return "tool_use" // some servers say stop even after tool calls
		}
		return "end_turn"
	}
	return finish
}
