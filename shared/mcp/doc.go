// Package mcp speaks the Model Context Protocol for sessions' MCP servers:
// Connector is the contracts.MCPConnector over the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), one connection per list or
// call over Streamable HTTP or the older HTTP+SSE transport, with the
// server's headers resolved from their secret references at the call;
// ToolName is the name the model sees of a server's tool
// (mcp__<server>__<tool>); a call result maps to a tool result (text,
// references for images, audio and resources, structured content as JSON,
// isError). Pinning the listed tools in the session, validating input
// against them and policy are the engine's and the toolset's (shared/turn,
// shared/tools).
//
// It may import shared/contracts, the standard library and the MCP Go SDK.
package mcp
