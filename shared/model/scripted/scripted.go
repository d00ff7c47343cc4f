package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Client implements contracts.ModelClient.
type Client struct {
	calls atomic.Int64
	sizes sync.Map // node id → the bytes of the path up to it (inputTokens)
	nsize atomic.Int64
}

var (
	_ contracts.ModelClient  = (*Client)(nil)
	_ contracts.ModelChecker = (*Client)(nil)
)

// New returns a scripted model client.
func New() *Client { return &Client{} }

// Calls returns how many streams were started.
func (c *Client) Calls() int64 { return c.calls.Load() }

// Scenarios lists the known scenario names.
func Scenarios() []string {
	out := make([]string, 0, len(scenarios))
	for k := range scenarios {
		out = append(out, k)
	}
	return out
}

// Parse splits "name@latency" and checks the scenario exists.
func Parse(model string) (name string, latency time.Duration, err error) {
	name = model
	if i := strings.IndexByte(model, '@'); i >= 0 {
		name = model[:i]
		latency, err = time.ParseDuration(model[i+1:])
		if err != nil || latency < 0 || latency > time.Minute {
			return "", 0, fmt.Errorf("scripted model %q: bad latency: %w", model, contracts.ErrInvalid)
		}
	}
	if _, ok := scenarios[name]; !ok && sized(name) == nil {
		return "", 0, fmt.Errorf("scripted model %q: unknown scenario (known: %s): %w", model, strings.Join(Scenarios(), ", "), contracts.ErrInvalid)
	}
	return name, latency, nil
}

// Stream plays the scenario's next step.
func (c *Client) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	name, latency, err := Parse(req.Model)
	if err != nil {
		return contracts.ModelResponse{}, err
	}
	c.calls.Add(1)
	steps, chunkBytes := scenarios[name], 24
	n, prompt := position(req.Messages)
	if sz := sized(name); sz != nil {
		steps, chunkBytes = sz.steps(prompt), sz.chunk
	}
	st := steps[min(n, len(steps)-1)]
	text := strings.ReplaceAll(st.text, "{prompt}", prompt)

	var resp contracts.ModelResponse
	send := func(ev contracts.ModelEvent) error {
		if latency > 0 {
			t := time.NewTimer(latency)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		return emit(ev)
	}
	for _, chunk := range chunks(text, chunkBytes) {
		if err := send(contracts.ModelEvent{Type: contracts.ModelText, Text: chunk}); err != nil {
			return resp, err
		}
		resp.Text += chunk
	}
	for i, cl := range st.calls {
		tc := contracts.ToolCall{ID: fmt.Sprintf("call_%d_%d", n, i), Name: cl.name, Input: mustJSON(withPrompt(cl.input, prompt))}
		if cl.name == "{tool}" { // the "call" scenario: tool and input from the prompt
			tool, input, _ := strings.Cut(strings.TrimSpace(prompt), " ")
			tc.Name, tc.Input = tool, json.RawMessage(strings.TrimSpace(input))
			if len(tc.Input) == 0 {
				tc.Input = json.RawMessage("{}")
			} else if !json.Valid(tc.Input) {
				tc.Input = mustJSON(map[string]any{"input": input}) // stored as given; the schema refuses it
			}
		}
		if err := send(contracts.ModelEvent{Type: contracts.ModelToolCall, ToolCall: &tc}); err != nil {
			return resp, err
		}
		resp.ToolCalls = append(resp.ToolCalls, tc)
	}
	resp.Usage = contracts.Usage{InputTokens: c.inputTokens(req), OutputTokens: (len(text) + 3) / 4}
	if err := send(contracts.ModelEvent{Type: contracts.ModelUsage, Usage: &resp.Usage}); err != nil {
		return resp, err
	}
	resp.StopReason = "end_turn"
	if len(resp.ToolCalls) > 0 {
		resp.StopReason = "tool_use"
	}
	return resp, nil
}

// withPrompt replaces "{prompt}" in the input's string values.
func withPrompt(in map[string]any, prompt string) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		if s, ok := v.(string); ok {
			v = strings.ReplaceAll(s, "{prompt}", prompt)
		}
		out[k] = v
	}
	return out
}

// position counts assistant nodes after the last user node and returns the
// last user prompt.
func position(msgs []contracts.Node) (int, string) {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- { // from the end: a long session's earlier turns do not count
		switch msgs[i].Role {
		case contracts.RoleUser:
			prompt := ""
			for _, b := range msgs[i].Blocks {
				prompt += b.Text
			}
			return n, prompt
		case contracts.RoleAssistant:
			n++
		}
	}
	return n, ""
}

// chunks splits text into word-boundary pieces of about size bytes.
func chunks(text string, size int) []string {
	var out []string
	for len(text) > size {
		i := strings.IndexByte(text[size:], ' ')
		if i < 0 {
			break
		}
		out = append(out, text[:size+i+1])
		text = text[size+i+1:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

func (c *Client) inputTokens(req contracts.ModelRequest) int {
	// The path's size up to a node never changes (nodes are immutable):
	// remembered per node, a long session's step counts only what is new.
	n, from := 0, 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if v, ok := c.sizes.Load(req.Messages[i].ID); ok && req.Messages[i].ID != "" {
			n, from = v.(int), i+1
			break
		}
	}
	for _, m := range req.Messages[from:] {
		for _, b := range m.Blocks {
			n += len(b.Text)
			if b.ToolCall != nil {
				n += len(b.ToolCall.Input)
			}
			if b.ToolResult != nil {
				n += len(b.ToolResult.Content)
			}
		}
		if m.ID != "" {
			if c.nsize.Add(1) > 1<<16 { // bounded: start over
				c.sizes.Clear()
				c.nsize.Store(0)
			}
			c.sizes.Store(m.ID, n)
		}
	}
	return (n + len(req.System) + 3) / 4
}

// CheckModel validates a scenario name without calling the model.
func (c *Client) CheckModel(model string) error {
	_, _, err := Parse(model)
	return err
}
