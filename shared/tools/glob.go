package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

const globSchema = `{
	"type": "object",
	"properties": {
		"pattern": {"type": "string", "minLength": 1, "description": "Glob pattern relative to the workspace root; ** matches any number of directories, e.g. \"**/*.go\" or \"src/*.{ts,tsx}\"."}
	},
	"required": ["pattern"],
	"additionalProperties": false
}`

func globDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "glob",
			Description: "Find workspace paths matching a glob pattern; one path per line, sorted.",
			InputSchema: []byte(globSchema),
		},
		Effect:    contracts.ReadOnly,
		InSandbox: true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			if err := requireSandbox("glob", b); err != nil {
				return nil, err
			}
			return globTool{b.Sandbox}, nil
		},
	}
}

type globTool struct{ sb contracts.SandboxAPI }

func (t globTool) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	var in struct {
		Pattern string `json:"pattern"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	paths, err := t.sb.Glob(ctx, in.Pattern)
	if err != nil {
		return failure(err)
	}
	if len(paths) == 0 {
		return contracts.ToolResult{Content: fmt.Sprintf("no files match %s", in.Pattern)}, nil
	}
	return contracts.ToolResult{Content: strings.Join(paths, "\n")}, nil
}
