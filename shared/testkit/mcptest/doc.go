// Package mcptest starts real MCP servers for tests: the reference server
// @modelcontextprotocol/server-everything (npm, run with npx, which the
// CI machine has) over Streamable HTTP or the older HTTP+SSE transport, on
// a free loopback port, stopped (its whole process group) when the test
// ends.
//
// It also is a stdio MCP server of the official Go SDK that a test binary
// becomes (stdio.go: StdioArg, ServeStdioIfAsked), for sandboxes to run.
//
// It may import only the standard library and the MCP Go SDK.
package mcptest
