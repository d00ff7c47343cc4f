// Package mcptools is the MCP part of the AWS backend: the connector to
// sessions' MCP servers over the official Go SDK (shared/mcp), which only
// the api function (it lists and pins a new session's MCP tools) and the
// tools function (it calls them) link:
//
//	rt, err := backend.Boot(ctx, os.Getenv, log, backend.Serves{MCP: mcptools.Connector})
//
// It may import shared/aws/backend, shared/contracts, shared/mcp,
// shared/secrets and the standard library.
package mcptools
