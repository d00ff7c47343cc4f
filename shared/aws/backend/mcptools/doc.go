// Package mcptools is the MCP part of the AWS backend: the connector to
// sessions' MCP servers over the official Go SDK (shared/mcp), which only
// the api function (it lists and pins a new session's MCP tools) and the
// tools function (it calls them) link, and the api function's /v1/mcp
// server (shared/mcp/serve):
//
//	rt, err := backend.Boot(ctx, os.Getenv, log, backend.Serves{MCP: mcptools.Connector, MCPServer: mcptools.Server})
//
// It may import shared/api, shared/aws/backend, shared/contracts,
// shared/mcp, shared/mcp/serve, shared/secrets and the standard library.
package mcptools
