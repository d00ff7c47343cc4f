package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnrun/cairn/shared/contracts"
)

// DefaultOutputCap bounds a tool's output when Binding.OutputCap is 0.
const DefaultOutputCap = 32 << 10

// Registry is the static list of built-in tool definitions with their input
// schemas compiled once. It is immutable and safe for concurrent use.
type Registry struct {
	defs       []contracts.ToolDef
	schemas    map[string]*jsonschema.Schema
	mcpSchemas sync.Map // sha256 of a pinned MCP input schema → compiled (mcp.go)
}

var _ contracts.ToolRegistry = (*Registry)(nil)

// NewRegistry returns the registry of the built-in tools (eight sandbox tools
// and the opt-in run_workflow). The schemas
// are static code; one that does not compile is a programming error and
// panics (the package tests compile them all).
func NewRegistry() *Registry {
	defs := []contracts.ToolDef{
		readFileDef(), writeFileDef(), editFileDef(), listDirDef(),
		globDef(), grepDef(), bashDef(), pythonDef(), runWorkflowDef(),
	}
	for i := range defs {
		var buf bytes.Buffer
		if err := json.Compact(&buf, defs[i].InputSchema); err != nil {
			panic(fmt.Sprintf("tools: input schema of %s: %v", defs[i].Name, err))
		}
		defs[i].InputSchema = buf.Bytes()
	}
	schemas, err := compileSchemas(defs)
	if err != nil {
		panic("tools: " + err.Error())
	}
	return &Registry{defs: defs, schemas: schemas}
}

// Definitions returns the built-in definitions in a fixed order.
func (r *Registry) Definitions() []contracts.ToolDef {
	return slices.Clone(r.defs)
}

// Lookup returns the definition of the named tool.
func (r *Registry) Lookup(name string) (contracts.ToolDef, bool) {
	for _, d := range r.defs {
		if d.Name == name {
			return d, true
		}
	}
	return contracts.ToolDef{}, false
}

// Bind builds a session's toolset from its tool configs, in their order,
// then the binding's pinned MCP tools (mcp.go).
// An unknown or duplicate tool name, a config that is not a JSON object, or
// a factory refusing the binding is ErrInvalid. A binding without a
// sandbox is spec-only: Specs and Effect work, Call returns an error. A config's
// ReadOnly, when set, overrides the definition's Effect.
func (r *Registry) Bind(configs []contracts.ToolConfig, b contracts.Binding) (contracts.Toolset, error) {
	ts := &toolset{
		byName:    make(map[string]*boundTool, len(configs)),
		outputCap: b.OutputCap,
		specOnly:  b.Sandbox == nil,
	}
	if ts.outputCap <= 0 {
		ts.outputCap = DefaultOutputCap
	}
	for _, c := range configs {
		def, ok := r.Lookup(c.Name)
		if !ok {
			return nil, fmt.Errorf("binding tools: unknown tool %q: %w", c.Name, contracts.ErrInvalid)
		}
		if _, dup := ts.byName[c.Name]; dup {
			return nil, fmt.Errorf("binding tools: tool %q listed twice: %w", c.Name, contracts.ErrInvalid)
		}
		if err := checkConfig(c.Config); err != nil {
			return nil, fmt.Errorf("binding tool %s: %w", c.Name, err)
		}
		effect := def.Effect
		if c.ReadOnly != nil {
			effect = contracts.Mutating
			if *c.ReadOnly {
				effect = contracts.ReadOnly
			}
		}
		bb := b
		bb.Config = c.Config
		tool, err := def.Factory(bb)
		if err != nil {
			return nil, fmt.Errorf("binding tool %s: %w", c.Name, err)
		}
		bt := &boundTool{spec: def.ToolSpec, effect: effect, inSandbox: def.InSandbox, schema: r.schemas[c.Name], tool: tool}
		ts.byName[c.Name] = bt
		ts.order = append(ts.order, bt)
	}
	if err := r.bindMCP(ts, b); err != nil {
		return nil, err
	}
	return ts, nil
}

// checkConfig accepts an empty config, JSON null or a JSON object.
func checkConfig(cfg json.RawMessage) error {
	trimmed := bytes.TrimSpace(cfg)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil
	}
	var obj map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &obj) != nil {
		return fmt.Errorf("config must be a JSON object: %w", contracts.ErrInvalid)
	}
	return nil
}
