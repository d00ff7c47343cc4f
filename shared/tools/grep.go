package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

const grepSchema = `{
	"type": "object",
	"properties": {
		"pattern": {"type": "string", "minLength": 1, "description": "RE2 regular expression matched against each line."},
		"path": {"type": "string", "description": "File or directory to search, relative to the workspace root (default \".\")."},
		"glob": {"type": "string", "description": "Only search files matching this glob: without \"/\" it matches the file name (\"*.go\"), with \"/\" the workspace path (\"src/**/*.ts\")."}
	},
	"required": ["pattern"],
	"additionalProperties": false
}`

func grepDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "grep",
			Description: "Search workspace text files for a regular expression; prints path:line:text per match, sorted by path and line. Binary files are skipped.",
			InputSchema: []byte(grepSchema),
		},
		Effect:    contracts.ReadOnly,
		InSandbox: true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			if err := requireSandbox("grep", b); err != nil {
				return nil, err
			}
			return grepTool{b.Sandbox}, nil
		},
	}
}

type grepTool struct{ sb contracts.SandboxAPI }

func (t grepTool) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	var in struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
		Glob    string `json:"glob"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	res, err := t.sb.Grep(ctx, contracts.GrepRequest{Pattern: in.Pattern, Path: in.Path, Glob: in.Glob})
	if err != nil {
		return failure(err)
	}
	if len(res.Matches) == 0 {
		return contracts.ToolResult{Content: "no matches"}, nil
	}
	var b strings.Builder
	for i, m := range res.Matches {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d:%s", m.Path, m.Line, m.Text)
	}
	if res.Truncated {
		fmt.Fprintf(&b, "\n[match limit reached: showing the first %d matches]", len(res.Matches))
	}
	return contracts.ToolResult{Content: b.String()}, nil
}
