package main

import (
	"context"
	"errors"
	"flag"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserve "github.com/cairnrun/cairn/shared/mcp/serve"
)

// MCPMaxWait bounds how long a `cairn mcp` tool waits for a turn before
// it returns a handle (an MCP client may ask for less with wait_seconds).
const MCPMaxWait = 10 * time.Minute

// cmdMCP: cairn mcp [--addr URL --token T | --data DIR] serves cairn as an
// MCP server on stdin/stdout, for an MCP client that starts it (Claude
// Code, Claude Desktop, Codex, an IDE): its tools call the API of a dev
// server (or of AWS), or of an embedded runtime in this process.
func cmdMCP(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	maxWait := fs.Duration("max-wait", MCPMaxWait, "the longest a tool waits for a turn before it returns a handle")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return errors.New("mcp: takes no arguments (it speaks MCP on stdin and stdout)")
	}
	if *maxWait < time.Second {
		return errors.New("mcp: --max-wait is at least 1s")
	}
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	srv := mcpserve.New(mcpserve.Config{API: cl.Send, MaxWait: *maxWait}) // each tool's API call, with the client's credentials
	err = srv.Run(ctx, &sdk.StdioTransport{})
	if ctx.Err() != nil {
		return nil // stopped by a signal, or the client closed stdin
	}
	return err
}
