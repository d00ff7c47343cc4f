package mcp

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
)

// newClient is the MCP client cairn connects with, for a listing and a
// call alike: what it declares is the same (some servers offer tools by
// the client's capabilities, so the pin depends on it), and it takes tool
// list change notifications, as the stdio host's client does.
func newClient() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "cairn", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {},
	})
}

// changed is the note appended to a call's result when the server's tools
// (listed, filtered as the pin was) are not the pinned ones; "" when they
// are. The session keeps the pinned tools: a changed server is reported,
// never re-bound.
func changed(s contracts.MCPServer, pin []contracts.MCPTool, listed []*sdk.Tool) string {
	now := map[string]contracts.MCPTool{}
	for _, t := range listed {
		if len(s.Tools) > 0 && !slices.Contains(s.Tools, t.Name) {
			continue
		}
		if p, err := pinned(s, t); err == nil {
			now[p.Name] = p
		}
	}
	var added, removed, differ []string
	was := map[string]bool{}
	for _, p := range pin {
		was[p.Name] = true
		n, ok := now[p.Name]
		switch {
		case !ok:
			removed = append(removed, p.Tool)
		case n.Description != p.Description || n.ReadOnly != p.ReadOnly || !bytes.Equal(n.InputSchema, p.InputSchema):
			differ = append(differ, p.Tool)
		}
	}
	for name, n := range now {
		if !was[name] {
			added = append(added, n.Tool)
		}
	}
	if len(added)+len(removed)+len(differ) == 0 {
		return ""
	}
	var parts []string
	for _, d := range []struct {
		what  string
		names []string
	}{{"added", added}, {"removed", removed}, {"changed", differ}} {
		if len(d.names) > 0 {
			slices.Sort(d.names)
			parts = append(parts, d.what+": "+strings.Join(d.names, ", "))
		}
	}
	return fmt.Sprintf("\n[cairn: MCP server %s's tools changed since this session pinned them (%s); the session keeps offering the pinned tools]", s.Name, strings.Join(parts, "; "))
}
