package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// errIncomplete marks a stream that ended (or broke) before its messageStop
// and metadata events, or that carried something unusable. The SDK's
// event-stream decoder treats a connection cut mid-frame like a clean end of
// stream, so completeness is checked here.
var errIncomplete = errors.New("bedrock stream incomplete")

// streamOnce makes one ConverseStream call and reads its events: text
// deltas are emitted as they arrive, each tool call once its block stops,
// the usage once the stream has ended complete.
func (c *Client) streamOnce(ctx context.Context, in *bedrockruntime.ConverseStreamInput, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	model := aws.ToString(in.ModelId)
	out, err := c.api.ConverseStream(ctx, in, iamOnly)
	if err != nil {
		return contracts.ModelResponse{}, describe(model, err)
	}
	es := out.GetStream()
	if es == nil {
		return contracts.ModelResponse{}, fmt.Errorf("bedrock model %q: response without an event stream: %w", model, errIncomplete)
	}
	defer es.Close()
	a := assembler{tools: map[int32]*pendingTool{}}
	events := es.Events()
read:
	for {
		select {
		case <-ctx.Done():
			return a.resp, ctx.Err()
		case ev, ok := <-events:
			if !ok {
				break read
			}
			if err := a.add(ev, emit); err != nil {
				return a.resp, err
			}
		}
	}
	if err := es.Err(); err != nil {
		return a.resp, describe(model, err)
	}
	if !a.stopped {
		return a.resp, fmt.Errorf("bedrock model %q: stream ended before its messageStop event: %w", model, errIncomplete)
	}
	if !a.metered {
		return a.resp, fmt.Errorf("bedrock model %q: stream ended before its metadata (usage) event: %w", model, errIncomplete)
	}
	usage := a.resp.Usage
	if err := emit(contracts.ModelEvent{Type: contracts.ModelUsage, Usage: &usage}); err != nil {
		return a.resp, err
	}
	return a.resp, nil
}

// pendingTool is a toolUse block whose input is still streaming.
type pendingTool struct {
	id, name string
	input    strings.Builder
}

// assembler builds the response from the stream's events.
type assembler struct {
	resp    contracts.ModelResponse
	tools   map[int32]*pendingTool // by contentBlockIndex
	stopped bool                   // messageStop seen
	metered bool                   // metadata seen
}

func (a *assembler) add(ev types.ConverseStreamOutput, emit func(contracts.ModelEvent) error) error {
	switch e := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if s, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			a.tools[aws.ToInt32(e.Value.ContentBlockIndex)] = &pendingTool{id: aws.ToString(s.Value.ToolUseId), name: aws.ToString(s.Value.Name)}
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := e.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			if d.Value == "" {
				return nil
			}
			a.resp.Text += d.Value
			return emit(contracts.ModelEvent{Type: contracts.ModelText, Text: d.Value})
		case *types.ContentBlockDeltaMemberToolUse:
			t := a.tools[aws.ToInt32(e.Value.ContentBlockIndex)]
			if t == nil {
				return fmt.Errorf("toolUse delta for block %d, which did not start as a toolUse: %w", aws.ToInt32(e.Value.ContentBlockIndex), errIncomplete)
			}
			t.input.WriteString(aws.ToString(d.Value.Input))
		}
	case *types.ConverseStreamOutputMemberContentBlockStop:
		idx := aws.ToInt32(e.Value.ContentBlockIndex)
		t := a.tools[idx]
		if t == nil {
			return nil
		}
		delete(a.tools, idx)
		call, err := t.call()
		if err != nil {
			return err
		}
		a.resp.ToolCalls = append(a.resp.ToolCalls, call)
		return emit(contracts.ModelEvent{Type: contracts.ModelToolCall, ToolCall: &call})
	case *types.ConverseStreamOutputMemberMessageStop:
		a.stopped = true
		a.resp.StopReason = string(e.Value.StopReason)
	case *types.ConverseStreamOutputMemberMetadata:
		if u := e.Value.Usage; u != nil {
			a.resp.Usage = contracts.Usage{InputTokens: int(aws.ToInt32(u.InputTokens)), OutputTokens: int(aws.ToInt32(u.OutputTokens))}
		}
		a.metered = true
	}
	return nil
}

// call is the finished tool call: its input fragments joined (none → {}),
// checked and compacted.
func (t *pendingTool) call() (contracts.ToolCall, error) {
	if t.id == "" || t.name == "" {
		return contracts.ToolCall{}, fmt.Errorf("toolUse block without id or name: %w", errIncomplete)
	}
	raw := strings.TrimSpace(t.input.String())
	if raw == "" {
		raw = "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(raw)); err != nil {
		return contracts.ToolCall{}, fmt.Errorf("input of tool call %s (%s) is not JSON: %v: %w", t.id, t.name, err, errIncomplete)
	}
	return contracts.ToolCall{ID: t.id, Name: t.name, Input: json.RawMessage(buf.Bytes())}, nil
}
