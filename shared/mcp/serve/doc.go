// Package serve exposes cairn as a Model Context Protocol server: an MCP
// client (Claude Code, Claude Desktop, Codex, an IDE) hands a task to a
// durable turn instead of a call that dies with the client. Its tools —
// run_agent, get_result, approve, cancel and run_workflow — are calls of
// cairn's own HTTP API (Config.API), so they have its authentication,
// principals, owner checks and errors exactly: `cairn mcp` (stdio) calls
// a server's API over HTTP, the API's /v1/mcp endpoint calls its own
// handler in-process with the request's credentials. A turn that is still
// running when the wait ends is returned as a handle (session and
// submission ids) get_result picks up; while a tool waits, every journal
// event is reported as an MCP progress notification.
//
// It may import shared/contracts, the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk) and its JSON Schema package
// (github.com/google/jsonschema-go), and the standard library.
package serve
