package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/cairnrun/cairn/shared/contracts"
)

// errIncomplete: the connection ended cleanly before message_stop (a proxy
// or server closing a response without a length looks like a normal end).
var errIncomplete = errors.New("anthropic stream ended before message_stop")

// accumulator turns Messages API stream events into ModelEvents and the
// assembled ModelResponse.
type accumulator struct {
	resp    contracts.ModelResponse
	blocks  map[int64]*block
	started bool // message_start seen
	stopped bool // message_stop seen
}

// block is one open content block.
type block struct {
	kind  string // "text", "tool_use", or a kind this client ignores
	id    string
	name  string
	input strings.Builder // partial_json fragments, joined
	start json.RawMessage // the input given with content_block_start, if any
}

// add applies one event, emitting what it completes.
func (a *accumulator) add(ev sdk.MessageStreamEventUnion, emit func(contracts.ModelEvent) error) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.started = true
		a.resp.Usage = contracts.Usage{
			InputTokens:  int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
			OutputTokens: int(u.OutputTokens),
		}
	case "content_block_start":
		if a.blocks == nil {
			a.blocks = map[int64]*block{}
		}
		cb := ev.ContentBlock
		b := &block{kind: cb.Type, id: cb.ID, name: cb.Name}
		if cb.Type == "tool_use" && cb.JSON.Input.Valid() {
			b.start = json.RawMessage(cb.JSON.Input.Raw())
		}
		a.blocks[ev.Index] = b
		if cb.Type == "text" && cb.Text != "" {
			return a.text(cb.Text, emit)
		}
	case "content_block_delta":
		b := a.blocks[ev.Index]
		if b == nil {
			return fmt.Errorf("anthropic stream: delta for unknown content block %d", ev.Index)
		}
		switch ev.Delta.Type {
		case "text_delta":
			return a.text(ev.Delta.Text, emit)
		case "input_json_delta":
			b.input.WriteString(ev.Delta.PartialJSON)
		}
	case "content_block_stop":
		b := a.blocks[ev.Index]
		if b == nil {
			return fmt.Errorf("anthropic stream: stop for unknown content block %d", ev.Index)
		}
		delete(a.blocks, ev.Index)
		if b.kind != "tool_use" {
			return nil
		}
		tc := contracts.ToolCall{ID: b.id, Name: b.name, Input: toolInput(b)}
		a.resp.ToolCalls = append(a.resp.ToolCalls, tc)
		return emit(contracts.ModelEvent{Type: contracts.ModelToolCall, ToolCall: &tc})
	case "message_delta":
		a.resp.StopReason = string(ev.Delta.StopReason)
		// Counts here are cumulative totals for the whole message.
		u := ev.Usage
		a.resp.Usage.OutputTokens = int(u.OutputTokens)
		if u.JSON.InputTokens.Valid() || u.JSON.CacheCreationInputTokens.Valid() || u.JSON.CacheReadInputTokens.Valid() {
			if in := int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens); in > 0 {
				a.resp.Usage.InputTokens = in
			}
		}
	case "message_stop":
		a.stopped = true
	}
	return nil
}

func (a *accumulator) text(s string, emit func(contracts.ModelEvent) error) error {
	if s == "" {
		return nil
	}
	a.resp.Text += s
	return emit(contracts.ModelEvent{Type: contracts.ModelText, Text: s})
}

// finish checks the message ended and emits the usage.
func (a *accumulator) finish(emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	if !a.started || !a.stopped {
		return a.resp, errIncomplete
	}
	u := a.resp.Usage
	if err := emit(contracts.ModelEvent{Type: contracts.ModelUsage, Usage: &u}); err != nil {
		return a.resp, err
	}
	return a.resp, nil
}

// toolInput is the block's assembled input as compact JSON: the joined
// partial_json fragments, else the input given at content_block_start, and
// `{}` when that is empty or is not a JSON object (a tool call cut off by
// max_tokens leaves truncated JSON; like the SDK's own accumulator, it
// becomes `{}`, so the tool reports missing arguments to the model and the
// transcript stays sendable).
func toolInput(b *block) json.RawMessage {
	raw := []byte(strings.TrimSpace(b.input.String()))
	if len(raw) == 0 {
		raw = bytes.TrimSpace(b.start)
	}
	var buf bytes.Buffer
	if len(raw) == 0 || raw[0] != '{' || json.Compact(&buf, raw) != nil {
		return json.RawMessage(`{}`)
	}
	return buf.Bytes()
}
