package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnrun/cairn/shared/contracts"
)

// boundTool is one tool of a toolset.
type boundTool struct {
	spec      contracts.ToolSpec
	effect    contracts.Effect
	inSandbox bool // ToolDef.InSandbox (an MCP tool: false)
	schema    *jsonschema.Schema
	tool      contracts.Tool
}

// toolset is a session's bound tools; immutable once built.
type toolset struct {
	order     []*boundTool
	byName    map[string]*boundTool
	outputCap int
	specOnly  bool // bound without a sandbox: Specs and Effect only
}

var (
	_ contracts.Toolset          = (*toolset)(nil)
	_ contracts.SandboxedToolset = (*toolset)(nil)
)

// Specs returns what the model sees of the tools, in binding order.
func (ts *toolset) Specs() []contracts.ToolSpec {
	out := make([]contracts.ToolSpec, len(ts.order))
	for i, bt := range ts.order {
		out[i] = bt.spec
	}
	return out
}

// Effect of a bound tool ("" if unknown).
func (ts *toolset) Effect(name string) contracts.Effect {
	if bt, ok := ts.byName[name]; ok {
		return bt.effect
	}
	return ""
}

// InSandbox reports whether a bound tool's work is all in the session's
// sandbox (false if unknown).
func (ts *toolset) InSandbox(name string) bool {
	bt, ok := ts.byName[name]
	return ok && bt.inSandbox
}

// Call validates the input, runs the tool and caps its output. Unknown tools
// and schema violations are IsError results; a returned error is an
// infrastructure failure. The result always carries call.ID.
func (ts *toolset) Call(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	bt, ok := ts.byName[call.Name]
	if !ok {
		return contracts.ToolResult{CallID: call.ID, Content: fmt.Sprintf("unknown tool %s", call.Name), IsError: true}, nil
	}
	if msg, ok := validate(bt.schema, call.Input); !ok {
		return contracts.ToolResult{CallID: call.ID, Content: fmt.Sprintf("invalid input for tool %s: %s", call.Name, msg), IsError: true}, nil
	}
	if ts.specOnly {
		return contracts.ToolResult{CallID: call.ID}, errNoSandbox(call.Name)
	}
	res, err := bt.tool.Run(ctx, call)
	if err != nil {
		return contracts.ToolResult{CallID: call.ID}, fmt.Errorf("running tool %s (call %s): %w", call.Name, call.ID, err)
	}
	res.CallID = call.ID
	res.Content = capText(res.Content, ts.outputCap)
	return res, nil
}

// capText keeps the first limit bytes of s (cut back to a rune boundary)
// followed by a marker telling how many bytes were omitted.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	keep := limit
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf("\n[output truncated: %d bytes omitted]", len(s)-keep)
}

// decode unmarshals validated input into v ("" counts as {}).
func decode(input json.RawMessage, v any) error {
	if len(input) == 0 {
		return nil
	}
	return json.Unmarshal(input, v)
}

// effectID is the id a mutating sandbox request carries (see
// contracts.ToolCall.EffectID).
func effectID(call contracts.ToolCall) string {
	if call.EffectID != "" {
		return call.EffectID
	}
	return call.ID
}

// badInput is the result for input that passed the schema but not decoding.
func badInput(call contracts.ToolCall, err error) contracts.ToolResult {
	return contracts.ToolResult{Content: fmt.Sprintf("invalid input for tool %s: %v", call.Name, err), IsError: true}
}

// failure turns a sandbox error into a result the model sees when it is the
// caller's or the workspace's fault, and returns other errors as they are.
func failure(err error) (contracts.ToolResult, error) {
	for _, s := range []error{contracts.ErrNotFound, contracts.ErrPermission, contracts.ErrInvalid, contracts.ErrTooLarge, contracts.ErrExists} {
		if errors.Is(err, s) {
			return contracts.ToolResult{Content: err.Error(), IsError: true}, nil
		}
	}
	return contracts.ToolResult{}, err
}

// number is a JSON integer that also accepts an integral float (1.0), as
// JSON Schema's "integer" does.
type number int64

func (n *number) UnmarshalJSON(b []byte) error {
	if i, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*n = number(i)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f != float64(int64(f)) {
		return fmt.Errorf("%s is not an integer", b)
	}
	*n = number(f)
	return nil
}

// requireSandbox is the check every built-in factory makes. A binding
// without a sandbox is allowed (the model phase binds only to read the
// specs, and the API to validate a spec); calling such a tool fails.
func requireSandbox(name string, b contracts.Binding) error { return nil }

// errNoSandbox is the infrastructure error of a spec-only binding's Call.
func errNoSandbox(name string) error {
	return fmt.Errorf("tool %s is bound without a sandbox (a spec-only binding cannot run tools)", name)
}

// jsonRaw keeps any JSON value as it came (null when absent).
type jsonRaw []byte

func (j *jsonRaw) UnmarshalJSON(b []byte) error {
	*j = append((*j)[:0], b...)
	return nil
}

func (j jsonRaw) raw() []byte {
	if len(j) == 0 {
		return nil
	}
	return []byte(j)
}
