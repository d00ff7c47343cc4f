package sqlite_test

import (
	stdjson "encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	segjson "github.com/segmentio/encoding/json"
)

// The store writes and reads its hot records (sessions, submissions,
// nodes, events, messages, stream chunks and completions, tool results)
// with a faster codec than encoding/json (codec.go). For every value, the
// awkward ones too — HTML and line separators, invalid UTF-8, raw inputs
// with space, zero and non-UTC times, omitzero and omitempty fields, nil
// and empty slices, maps — it must read what encoding/json wrote (files
// written before) as encoding/json does, encoding/json must read what it
// writes as the same value, and its writes must be encoding/json's bytes
// but for the zero fields tagged omitzero that it writes out.
func TestCodecIsEncodingJSON(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	odd := "a <b> & \u2028 \u2029 \x00 \x1f \"q\" \\ \xff\xfe é 😀"
	raw := stdjson.RawMessage(" { \"cmd\" : \"a < b && c\" , \"n\" : [1, 2.5e3, -0] } ")
	call := contracts.ToolCall{ID: "c1", Name: "bash", Input: raw, EffectID: "e", SessionID: "s", SubmissionID: "sub", Step: 2}
	usage := contracts.Usage{InputTokens: 1 << 40, OutputTokens: 7}
	values := []any{
		contracts.Session{},
		contracts.Session{ID: "ses", Owner: odd, Head: "nd", Active: "sub", Queued: true, Version: 9, CreatedAt: at, UpdatedAt: at.In(paris),
			Spec: contracts.SessionSpec{Model: "scripted:x", System: odd, Tools: []contracts.ToolConfig{{Name: "bash"}},
				Policy:  contracts.Policy{Tools: map[string]contracts.Decision{"z": contracts.Allow, "a": contracts.Ask}},
				Limits:  contracts.Limits{MaxSteps: 3},
				Sandbox: contracts.SandboxSpec{Kind: "local", Limits: contracts.SandboxLimits{Pids: 5}}},
			Sandbox: &contracts.SandboxRecord{Kind: "process", ID: "pid:1", StartedAt: at}},
		contracts.Submission{},
		contracts.Submission{ID: "sub", SessionID: "ses", IdempotencyKey: odd, Prompt: odd, Phase: contracts.PhaseTools, Step: 3, Version: 4, Attempt: 2,
			LeaseOwner: "o", LeaseUntil: at, StreamKey: "st", ToolRequests: []contracts.ToolCall{call, {ID: "c2", Name: "x", Input: stdjson.RawMessage(`null`)}},
			Approvals: []contracts.Approval{{ID: "ap", CallID: "c1", Tool: "bash", Input: raw, Step: 3}}, Decided: []contracts.Approval{},
			Leaf: "nd", Result: odd, Error: odd, Usage: usage, Cost: &contracts.Cost{Currency: "USD", Model: 0.25},
			StartedAt: at, ParkedAt: at.In(paris), ParkedNanos: 12, Owner: "me", Trace: "00-ab-cd-01", Parent: "nd0",
			Limits: &contracts.Limits{MaxTokens: 10}, Cancel: &contracts.Cancel{}, Resume: contracts.PhaseModel},
		contracts.Node{},
		contracts.Node{ID: "nd", Parent: "p", SessionID: "s", SubmissionID: "sub", Role: contracts.RoleAssistant, CreatedAt: at,
			Blocks: []contracts.Block{{Type: contracts.BlockText, Text: odd}, {Type: contracts.BlockToolUse, ToolCall: &call},
				{Type: contracts.BlockToolResult, ToolResult: &contracts.ToolResult{CallID: "c1", Content: odd, IsError: true}}}},
		contracts.Node{ID: "nd", Blocks: []contracts.Block{}, CreatedAt: time.Now()},
		contracts.Event{},
		contracts.Event{Seq: 3, SubmissionID: "sub", Key: "k", Type: contracts.EventToolFinished, Step: 1, Attempt: 2, Text: odd, Tool: "bash",
			CallID: "c1", ApprovalID: "ap", IsError: true, At: at.In(paris)},
		contracts.Message{},
		contracts.Message{Kind: "model", SessionID: "s", SubmissionID: "sub", Step: 2, Phase: contracts.PhaseModel, Version: 5, Nonce: odd,
			ScheduleID: "sc", ScheduledAt: at, Trace: "00-ab", SentAt: at, Orchestration: &contracts.Orchestration{}},
		contracts.ModelEvent{Type: contracts.ModelText, Text: odd},
		contracts.ModelEvent{Type: contracts.ModelToolCall, ToolCall: &call, Usage: &usage},
		contracts.ModelResponse{},
		contracts.ModelResponse{Text: odd, ToolCalls: []contracts.ToolCall{call}, StopReason: "tool_use", Usage: usage},
		contracts.ToolResult{CallID: "c", Content: odd, IsError: true},
	}
	read := func(unmarshal func([]byte, any) error, body []byte, like any) (any, error) {
		p := reflect.New(reflect.TypeOf(like))
		err := unmarshal(body, p.Interface())
		return p.Elem().Interface(), err
	}
	for i, v := range values {
		std, err := stdjson.Marshal(v)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		seg, err := segjson.Marshal(v)
		if err != nil {
			t.Errorf("value %d (%T): the store's codec cannot write it: %v", i, v, err)
			continue
		}
		want, err := read(stdjson.Unmarshal, std, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what      string
			body      []byte
			unmarshal func([]byte, any) error
		}{
			{"the store's codec reading encoding/json's bytes", std, segjson.Unmarshal},
			{"the store's codec reading its own bytes", seg, segjson.Unmarshal},
			{"encoding/json reading the store's codec's bytes", seg, stdjson.Unmarshal},
		} {
			got, err := read(c.unmarshal, c.body, v)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("value %d (%T), %s (%v):\n%#v\nwant\n%#v", i, v, c.what, err, got, want)
			}
		}
		if string(seg) != string(std) && string(omitZero(t, seg, std)) != string(std) {
			t.Errorf("value %d (%T): the store's codec writes\n%s\nencoding/json\n%s", i, v, seg, std)
		}
	}
}

// omitZero is seg without the members std lacks whose value is a zero
// time or an empty object: what an omitzero field written out looks like.
func omitZero(t *testing.T, seg, std []byte) []byte {
	t.Helper()
	var s, d any
	if stdjson.Unmarshal(seg, &s) != nil || stdjson.Unmarshal(std, &d) != nil {
		return seg
	}
	var strip func(s, d any) any
	strip = func(s, d any) any {
		so, ok1 := s.(map[string]any)
		do, ok2 := d.(map[string]any)
		if ok1 && ok2 {
			for k, v := range so {
				dv, in := do[k]
				if !in {
					if v == "0001-01-01T00:00:00Z" || reflect.DeepEqual(v, map[string]any{}) {
						delete(so, k)
					}
					continue
				}
				so[k] = strip(v, dv)
			}
			return so
		}
		sa, ok1 := s.([]any)
		da, ok2 := d.([]any)
		if ok1 && ok2 && len(sa) == len(da) {
			for i := range sa {
				sa[i] = strip(sa[i], da[i])
			}
		}
		return s
	}
	out, err := stdjson.Marshal(strip(s, d))
	if err != nil {
		t.Fatal(err)
	}
	std2, _ := stdjson.Marshal(d) // the same key order and number form on both sides
	if string(out) == string(std2) {
		return std
	}
	return out
}
