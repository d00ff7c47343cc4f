package mcptools

import (
	"net/http"
	"time"

	"github.com/cairnrun/cairn/shared/api"
	"github.com/cairnrun/cairn/shared/mcp/serve"
)

var _ api.MCPHandler = Server

// MaxWait bounds how long a /v1/mcp tool waits before it returns a handle:
// the api function answers behind API Gateway, which gives up at 29 s.
const MaxWait = 20 * time.Second

// Server serves the api function's /v1/mcp: cairn as an MCP server.
func Server(call func(*http.Request) (*http.Response, error)) http.Handler {
	return serve.Handler(call, MaxWait)
}
