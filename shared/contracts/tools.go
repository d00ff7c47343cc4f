package contracts

import (
	"context"
	"encoding/json"
)

// Effect says whether a tool changes the world. Recovery re-runs ReadOnly
// calls freely; a Mutating call with a "started" marker and no result is
// never re-run (it is reported as interrupted).
type Effect string

const (
	ReadOnly Effect = "read_only"
	Mutating Effect = "mutating"
)

// ToolSpec is what the model sees of a tool.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Binding is everything a tool factory may close over: rebuilt in every
// process from the session spec, never carried between phases.
type Binding struct {
	Sandbox   SandboxAPI
	SessionID string
	Config    json.RawMessage
	// OutputCap bounds the text a tool returns (bytes); 0 = default.
	OutputCap int
	// Workflows starts and reads workflow runs (the run_workflow tool);
	// nil where workflows are not served.
	Workflows WorkflowStarter
	// MCPServers and MCPTools are the session's MCP servers and its
	// pinned MCP tools (Session.MCP), bound after the built-ins; MCP calls
	// them (nil: spec-only, as without a sandbox).
	MCPServers []MCPServer
	MCPTools   []MCPTool
	MCP        MCPConnector
}

// WorkflowStarter is what a tool may do with workflows: start a run
// create-if-absent (the same id is the same run) and read it.
type WorkflowStarter interface {
	StartRun(ctx context.Context, run WorkflowRun) (WorkflowRun, error)
	GetRun(ctx context.Context, id string) (WorkflowRun, error)
}

// RunCanceller is the optional interface of a WorkflowStarter that cancels
// runs (the workflow driver; the API's POST …/runs/{rid}/cancel uses it).
// CancelRun is idempotent: a CANCELLED run is returned as it is; a run
// that ended otherwise is ErrConflict; a run not of workflowID ErrNotFound.
type RunCanceller interface {
	CancelRun(ctx context.Context, workflowID, runID, reason string) (WorkflowRun, error)
}

// Tool is a bound tool. Run gets input already validated against the
// schema. A failure the model should see (file missing, command failed) is a
// ToolResult with IsError; a returned error means the infrastructure failed
// and the call may be retried.
type Tool interface {
	Run(ctx context.Context, call ToolCall) (ToolResult, error)
}

// ToolDef is a context-free tool definition (docs/DESIGN.md §5).
type ToolDef struct {
	ToolSpec
	Effect  Effect
	Factory func(b Binding) (Tool, error)
	// OptIn tools are bound only when a session names them, never as part
	// of "every built-in tool".
	OptIn bool
	// InSandbox: everything the tool does is done in the session's
	// sandbox (its files, its commands) — nothing outside it (a workflow
	// run, an MCP server) is started or reached.
	InSandbox bool
}

// SandboxedToolset is a Toolset that can say whether a bound tool's work
// is all in the session's sandbox (ToolDef.InSandbox; an MCP server's
// tool never is).
type SandboxedToolset interface {
	InSandbox(name string) bool
}

// Toolset is a session's bound tools.
type Toolset interface {
	Specs() []ToolSpec
	// Effect of a bound tool ("" if unknown).
	Effect(name string) Effect
	// Call validates the input against the tool's schema (a schema
	// violation or unknown tool is an IsError result, not an error), runs it
	// and caps its output with a marker.
	Call(ctx context.Context, call ToolCall) (ToolResult, error)
}

// ToolRegistry is static code: the definitions and a binder.
type ToolRegistry interface {
	Definitions() []ToolDef
	// Bind rebuilds a session's toolset from its spec. Unknown tool names
	// or invalid config → ErrInvalid.
	Bind(configs []ToolConfig, b Binding) (Toolset, error)
}
