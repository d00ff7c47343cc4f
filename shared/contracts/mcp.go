package contracts

import (
	"context"
	"encoding/json"
	"time"
)

// MCP transports of a remote server (MCPServer.Transport).
const (
	MCPStreamable = "streamable" // Streamable HTTP, the default
	MCPSSE        = "sse"        // the older HTTP+SSE transport
)

// MCPServer is a Model Context Protocol server a session's tools come from
// (SessionSpec.MCP). Its tools are offered to the model as
// mcp__<Name>__<tool>.
type MCPServer struct {
	// Name: 1–32 of a-z, 0-9, _ and -, unique in the session.
	Name string `json:"name"`
	// URL of a remote server (http or https), spoken to over Transport.
	URL       string `json:"url,omitempty"`
	Transport string `json:"transport,omitempty"` // "" (streamable), "streamable" or "sse"
	// Headers are sent with every request to a remote server. Each value
	// is a secret reference (env:NAME, secretsmanager:ID or a Secrets
	// Manager ARN), resolved where the request is made: never stored or
	// logged resolved.
	Headers map[string]string `json:"headers,omitempty"`
	// Command runs a stdio server inside the session's sandbox (InSandbox
	// must say so: never in the runtime's process or environment).
	Command   []string `json:"command,omitempty"`
	InSandbox bool     `json:"in_sandbox,omitempty"`
	// Tools, when set, are the only tools of the server offered.
	Tools []string `json:"tools,omitempty"`
	// ReadOnly names tools treated as read-only whatever the server says
	// (an MCP tool is mutating unless annotated readOnlyHint).
	ReadOnly []string `json:"read_only,omitempty"`
}

// MCPTool is one tool of an MCP server as it was listed for a session and
// pinned in its record (MCPPin).
type MCPTool struct {
	Server      string          `json:"server"`
	Tool        string          `json:"tool"` // the server's own name
	Name        string          `json:"name"` // what the model sees: mcp__<server>__<tool>
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	ReadOnly    bool            `json:"read_only,omitempty"`
}

// MCPPin is a session's MCP toolset, listed once when the session is
// created and pinned in its record, so every phase in every process offers
// the model the same tools. Fingerprint is the SHA-256 of Tools: a server
// whose tools changed since is reported, not re-bound.
type MCPPin struct {
	// Servers are the servers listed so far: remote ones when the session
	// is created, stdio ones (in its sandbox) at the first model phase.
	Servers     []string  `json:"servers,omitempty"`
	Tools       []MCPTool `json:"tools"`
	Fingerprint string    `json:"fingerprint"`
	ListedAt    time.Time `json:"listed_at"`
}

// MCPConnector speaks to MCP servers: no connection to a remote server
// outlives a call, so any process holding a session's spec and pin can
// call its tools. A stdio server (Command) is reached through host, the
// session's sandbox, which runs it; host is nil for remote servers.
//
// ListTools lists a server's tools (every page), filtered by the server's
// Tools and marked read-only by its ReadOnly and the tools' annotations.
// CallTool makes one call (MCPCall); a server that cannot be reached, or
// fails the call at the protocol level, is an IsError result naming it,
// never an error the turn would retry on. A server whose tools differ from
// the pinned ones (it announces tool list changes, and its list now is
// not the pin) is reported in the result, and the pin stays.
type MCPConnector interface {
	ListTools(ctx context.Context, s MCPServer, host MCPHost) ([]MCPTool, error)
	CallTool(ctx context.Context, c MCPCall) (ToolResult, error)
}

// MCPCall is one call of an MCP tool.
type MCPCall struct {
	Server MCPServer
	Host   MCPHost // the session's sandbox, for a stdio server (nil: remote)
	Tool   string  // the server's own name of the tool
	Input  json.RawMessage
	// Meta is sent as _meta: the call's effect id, for a server that
	// de-duplicates.
	Meta map[string]any
	// Pinned are the server's tools as the session pinned them: what a
	// changed tool list is compared with.
	Pinned []MCPTool
}

// MCP methods a sandbox serves (MCPRequest.Method).
const (
	MCPListTools = "tools/list"
	MCPCallTool  = "tools/call"
)

// MCPHost is implemented by sandboxes that run stdio MCP servers inside
// themselves (the local sandbox, and sandboxd for process and fargate):
// the server is started on first use with the sandbox's containment,
// environment and user, and kept for the sandbox's life (a server that
// exited is started again on the next request).
type MCPHost interface {
	MCP(ctx context.Context, r MCPRequest) (MCPResponse, error)
}

// MCPRequest is one request to a stdio server in a sandbox.
type MCPRequest struct {
	Command []string `json:"command"` // the server (MCPServer.Command); one process per distinct command
	Method  string   `json:"method"`  // MCPListTools (every page) or MCPCallTool
	// Params of tools/call: {"name", "arguments", "_meta"}.
	Params json.RawMessage `json:"params,omitempty"`
}

// MCPResponse is the server's JSON-RPC result: {"tools": [...]} for
// MCPListTools, a CallToolResult for MCPCallTool. ToolsMayChange says the
// server declared that its tool list changes (capability
// tools.listChanged): a caller comparing with a pin lists again.
type MCPResponse struct {
	Result         json.RawMessage `json:"result"`
	ToolsMayChange bool            `json:"tools_may_change,omitempty"`
}
