package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
)

// DefaultSandboxListTimeout bounds listing a stdio server's tools in the
// session's sandbox, its start included: a first `npx -y …` downloads the
// package. It runs in a model phase, not in an API request.
const DefaultSandboxListTimeout = 3 * time.Minute

// listInSandbox lists a stdio server's tools through the sandbox that runs
// it.
func (c *Connector) listInSandbox(ctx context.Context, s contracts.MCPServer, host contracts.MCPHost) ([]contracts.MCPTool, error) {
	if host == nil {
		return nil, fmt.Errorf("mcp server %s runs in the session's sandbox, which serves no MCP servers here: %w", s.Name, contracts.ErrInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultSandboxListTimeout)
	defer cancel()
	resp, err := host.MCP(ctx, contracts.MCPRequest{Command: s.Command, Method: contracts.MCPListTools})
	if err != nil {
		if errors.Is(err, contracts.ErrInvalid) {
			return nil, fmt.Errorf("mcp server %s: %w", s.Name, err)
		}
		return nil, fmt.Errorf("mcp server %s (in the sandbox): listing tools: %v: %w", s.Name, err, contracts.ErrUnavailable)
	}
	var res sdk.ListToolsResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return nil, fmt.Errorf("mcp server %s (in the sandbox): its tool list: %v: %w", s.Name, err, contracts.ErrUnavailable)
	}
	return pinAll(s, res.Tools)
}

// callInSandbox calls a stdio server's tool through the sandbox that runs
// it. A server that fails the call is an IsError result; only ctx ending
// is an error.
func (c *Connector) callInSandbox(ctx context.Context, call contracts.MCPCall, args map[string]any) (contracts.ToolResult, error) {
	s, host, tool, meta := call.Server, call.Host, call.Tool, call.Meta
	if host == nil {
		return contracts.ToolResult{Content: fmt.Sprintf("MCP server %s runs in the session's sandbox, and this sandbox serves none (the call to %s was not made)", s.Name, tool), IsError: true}, nil
	}
	params, err := json.Marshal(&sdk.CallToolParams{Name: tool, Arguments: args, Meta: sdk.Meta(meta)})
	if err != nil {
		return contracts.ToolResult{Content: fmt.Sprintf("MCP tool %s of server %s: encoding the call: %v", tool, s.Name, err), IsError: true}, nil
	}
	callCtx, cancel := context.WithTimeout(ctx, DefaultSandboxListTimeout+c.callTimeout())
	defer cancel()
	resp, err := host.MCP(callCtx, contracts.MCPRequest{Command: s.Command, Method: contracts.MCPCallTool, Params: params})
	if err != nil {
		if ctx.Err() != nil {
			return contracts.ToolResult{}, ctx.Err()
		}
		return contracts.ToolResult{Content: fmt.Sprintf("MCP server %s (in the sandbox) failed the call to %s: %v (it may or may not have run)", s.Name, tool, err), IsError: true}, nil
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return contracts.ToolResult{Content: fmt.Sprintf("MCP server %s (in the sandbox) answered the call to %s with what is not a tool result: %v", s.Name, tool, err), IsError: true}, nil
	}
	out := result(&res)
	if resp.ToolsMayChange { // its tools may have changed: compare its list with the pin
		lctx, cancel := context.WithTimeout(ctx, c.listTimeout()) // a server that does not answer does not hold the call
		list, err := host.MCP(lctx, contracts.MCPRequest{Command: s.Command, Method: contracts.MCPListTools})
		cancel()
		if err == nil {
			var lr sdk.ListToolsResult
			if json.Unmarshal(list.Result, &lr) == nil {
				out.Content += changed(s, call.Pinned, lr.Tools)
			}
		}
	}
	return out, nil
}
