package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnrun/cairn/shared/contracts"
)

// MCP tools are bound from the session's pin (contracts.MCPPin), after the
// built-ins: their specs as listed, their input checked against the pinned
// schema before any call, a call made through the Binding's MCPConnector
// with the call's effect id in _meta.

// MetaEffectID and MetaSessionID are the _meta keys of an MCP call: a
// server that de-duplicates can use the effect id (the same for every
// re-issue of one call).
const (
	MetaEffectID  = "cairn/effect_id"
	MetaSessionID = "cairn/session_id"
)

type mcpTool struct {
	server contracts.MCPServer
	tool   string
	conn   contracts.MCPConnector
	host   contracts.MCPHost   // the session's sandbox, for a stdio server (nil: it serves none)
	pinned []contracts.MCPTool // the server's pinned tools, which a changed list is compared with
}

func (t mcpTool) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	if t.conn == nil {
		return contracts.ToolResult{}, fmt.Errorf("MCP tool %s is bound without a connector (spec only): %w", call.Name, contracts.ErrInvalid)
	}
	meta := map[string]any{MetaEffectID: effectID(call)}
	if call.SessionID != "" {
		meta[MetaSessionID] = call.SessionID
	}
	return t.conn.CallTool(ctx, contracts.MCPCall{Server: t.server, Host: t.host, Tool: t.tool, Input: call.Input, Meta: meta, Pinned: t.pinned})
}

// bindMCP adds the binding's pinned MCP tools to ts.
func (r *Registry) bindMCP(ts *toolset, b contracts.Binding) error {
	host, _ := b.Sandbox.(contracts.MCPHost)
	servers := map[string]contracts.MCPServer{}
	for _, s := range b.MCPServers {
		servers[s.Name] = s
	}
	pins := map[string][]contracts.MCPTool{}
	for _, mt := range b.MCPTools {
		pins[mt.Server] = append(pins[mt.Server], mt)
	}
	for _, mt := range b.MCPTools {
		s, ok := servers[mt.Server]
		if !ok {
			return fmt.Errorf("binding MCP tool %s: its server %q is not in the session's spec: %w", mt.Name, mt.Server, contracts.ErrInvalid)
		}
		if _, dup := ts.byName[mt.Name]; dup {
			return fmt.Errorf("binding MCP tool %s: the name is taken: %w", mt.Name, contracts.ErrInvalid)
		}
		sch, err := r.mcpSchema(mt)
		if err != nil {
			return err
		}
		effect := contracts.Mutating
		if mt.ReadOnly {
			effect = contracts.ReadOnly
		}
		desc := mt.Description
		if desc == "" {
			desc = fmt.Sprintf("Tool %s of the MCP server %s.", mt.Tool, mt.Server)
		}
		bt := &boundTool{
			spec:   contracts.ToolSpec{Name: mt.Name, Description: desc, InputSchema: mt.InputSchema},
			effect: effect, schema: sch, tool: mcpTool{server: s, tool: mt.Tool, conn: b.MCP, host: host, pinned: pins[mt.Server]},
		}
		ts.byName[mt.Name] = bt
		ts.order = append(ts.order, bt)
	}
	return nil
}

// mcpSchema compiles a pinned input schema once per registry (keyed by its
// bytes: every phase binds the same pins again).
func (r *Registry) mcpSchema(mt contracts.MCPTool) (*jsonschema.Schema, error) {
	sum := sha256.Sum256(mt.InputSchema)
	key := hex.EncodeToString(sum[:])
	if v, ok := r.mcpSchemas.Load(key); ok {
		return v.(*jsonschema.Schema), nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mt.InputSchema))
	if err != nil {
		return nil, fmt.Errorf("MCP tool %s: its input schema is not JSON: %v: %w", mt.Name, err, contracts.ErrInvalid)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "https://cairn.run/schemas/mcp/" + key + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("MCP tool %s: its input schema: %v: %w", mt.Name, err, contracts.ErrInvalid)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("MCP tool %s: its input schema does not compile: %v: %w", mt.Name, err, contracts.ErrInvalid)
	}
	r.mcpSchemas.Store(key, sch)
	return sch, nil
}
