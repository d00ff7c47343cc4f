package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
)

// MaxToolName is the longest tool name the model providers accept (and
// the pattern they accept: a-z, A-Z, 0-9, _ and -).
const MaxToolName = 64

// Prefix starts every MCP tool's name: mcp__<server>__<tool>.
const Prefix = "mcp__"

// ToolName is what the model sees of server's tool: mcp__<server>__<tool>,
// with characters the providers refuse replaced by _ and, when longer than
// MaxToolName, cut and suffixed with a hash of the whole name (so two long
// names stay apart).
func ToolName(server, tool string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, tool)
	name := Prefix + server + "__" + clean
	if len(name) <= MaxToolName && clean == tool {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(name)+len(suffix) > MaxToolName {
		name = name[:MaxToolName-len(suffix)]
	}
	return name + suffix
}

// pinned is t as a session pins it.
func pinned(s contracts.MCPServer, t *sdk.Tool) (contracts.MCPTool, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return contracts.MCPTool{}, fmt.Errorf("mcp server %s: tool %s: input schema: %w", s.Name, t.Name, err)
		}
		schema = b
	}
	ro := slices.Contains(s.ReadOnly, t.Name) || (t.Annotations != nil && t.Annotations.ReadOnlyHint)
	return contracts.MCPTool{Server: s.Name, Tool: t.Name, Name: ToolName(s.Name, t.Name), Description: t.Description, InputSchema: schema, ReadOnly: ro}, nil
}
