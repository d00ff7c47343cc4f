package mcptools

import (
	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/mcp"
	"github.com/cairnrun/cairn/shared/secrets"
)

var _ backend.MCPFunc = Connector

// Connector is the MCP connector of a function: headers' secret
// references resolved through the function's environment and Secrets
// Manager.
func Connector(res secrets.Resolver) contracts.MCPConnector {
	return &mcp.Connector{Resolve: res.Resolve}
}
