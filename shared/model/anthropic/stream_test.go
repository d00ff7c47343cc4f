package anthropic

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/cairnrun/cairn/shared/contracts"
)

// play feeds SSE events (as the fake server writes them) to an accumulator
// and returns the emitted events, rendered, and the result.
func play(t *testing.T, evs ...string) ([]string, contracts.ModelResponse, error) {
	t.Helper()
	var acc accumulator
	var out []string
	emit := func(ev contracts.ModelEvent) error {
		switch ev.Type {
		case contracts.ModelText:
			out = append(out, "text:"+ev.Text)
		case contracts.ModelToolCall:
			out = append(out, "call:"+ev.ToolCall.ID+" "+ev.ToolCall.Name+string(ev.ToolCall.Input))
		case contracts.ModelUsage:
			b, _ := json.Marshal(ev.Usage)
			out = append(out, "usage:"+string(b))
		}
		return nil
	}
	for _, e := range evs {
		_, data, _ := strings.Cut(strings.TrimSpace(e), "\ndata: ")
		if strings.HasPrefix(e, "event: ping") {
			continue // the SDK's stream skips pings
		}
		var ev sdk.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		if err := acc.add(ev, emit); err != nil {
			return out, acc.resp, err
		}
	}
	resp, err := acc.finish(emit)
	return out, resp, err
}

func TestAccumulatorToolInputs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fragments []string
		want      string
	}{
		{"split mid-token", []string{`{"pa`, `th": "no`, `tes.txt"`, `, "n": 1`, `2}`}, `{"path":"notes.txt","n":12}`},
		{"split inside an escape", []string{`{"s": "caf\u00`, `e9 \"q`, `\""}`}, `{"s":"caf\u00e9 \"q\""}`},
		{"no input at all", nil, `{}`},
		{"only empty fragments", []string{"", ""}, `{}`},
		{"cut off by max_tokens", []string{`{"path": "a`}, `{}`},
		{"not an object", []string{`[1, 2]`}, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := []string{messageStart("m", 5), toolStart(0, "toolu_x", "read_file")}
			for _, f := range tc.fragments {
				evs = append(evs, jsonDelta(0, f))
			}
			evs = append(evs, blockStop(0), messageDelta("tool_use", 3), messageStop())
			out, resp, err := play(t, evs...)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"call:toolu_x read_file" + tc.want, `usage:{"input_tokens":5,"output_tokens":3}`}
			if !reflect.DeepEqual(out, want) {
				t.Fatalf("events %q, want %q", out, want)
			}
			if len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Input) != tc.want || resp.StopReason != "tool_use" {
				t.Fatalf("response %+v", resp)
			}
		})
	}
}

func TestAccumulatorInputGivenAtStart(t *testing.T) {
	start := event("content_block_start", obj{"type": "content_block_start", "index": 0,
		"content_block": obj{"type": "tool_use", "id": "toolu_s", "name": "glob", "input": obj{"pattern": "*.go"}}})
	out, _, err := play(t, messageStart("m", 1), start, blockStop(0), messageDelta("tool_use", 2), messageStop())
	if err != nil || out[0] != `call:toolu_s glob{"pattern":"*.go"}` {
		t.Fatalf("%q %v", out, err)
	}
}

func TestAccumulatorOrderAndUsage(t *testing.T) {
	thinking := event("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "thinking", "thinking": "", "signature": ""}})
	thinkDelta := event("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "thinking_delta", "thinking": "hmm"}})
	start := event("message_start", obj{"type": "message_start", "message": obj{"id": "m", "type": "message", "role": "assistant", "content": []any{},
		"usage": obj{"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 1}}})
	delta := event("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": "max_tokens"},
		"usage": obj{"input_tokens": 20, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 30}})
	out, resp, err := play(t, start, thinking, thinkDelta, blockStop(0), ping(),
		textStart(1), textDelta(1, "a"), textDelta(1, ""), textDelta(1, "b"), blockStop(1),
		toolStart(2, "toolu_1", "bash"), jsonDelta(2, `{"command":"ls"}`), blockStop(2),
		textStart(3), textDelta(3, "c"), blockStop(3), delta, messageStop())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"text:a", "text:b", `call:toolu_1 bash{"command":"ls"}`, "text:c", `usage:{"input_tokens":1120,"output_tokens":30}`}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("events %q, want %q", out, want)
	}
	if resp.Text != "abc" || resp.StopReason != "max_tokens" || resp.Usage != (contracts.Usage{InputTokens: 1120, OutputTokens: 30}) {
		t.Fatalf("response %+v", resp)
	}
}

func TestAccumulatorBrokenStreams(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []string
		want error
	}{
		{"no message_stop", []string{messageStart("m", 1), textStart(0), textDelta(0, "x"), blockStop(0), messageDelta("end_turn", 1)}, errIncomplete},
		{"no message_start", []string{messageStop()}, errIncomplete},
		{"delta for an unknown block", []string{messageStart("m", 1), textDelta(4, "x")}, nil},
		{"stop for an unknown block", []string{messageStart("m", 1), blockStop(4)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := play(t, tc.evs...)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestAccumulatorEmitErrorAborts(t *testing.T) {
	boom := errors.New("stream store down")
	var acc accumulator
	var ev sdk.MessageStreamEventUnion
	for i, e := range []string{messageStart("m", 1), textStart(0), textDelta(0, "x")} {
		_, data, _ := strings.Cut(strings.TrimSpace(e), "\ndata: ")
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		err := acc.add(ev, func(contracts.ModelEvent) error { return boom })
		if (i == 2) != errors.Is(err, boom) {
			t.Fatalf("event %d: error %v", i, err)
		}
	}
}
