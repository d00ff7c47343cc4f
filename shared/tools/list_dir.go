package tools

import (
	"context"
	"path"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

const listDirSchema = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "default": ".", "description": "Directory relative to the workspace root (default \".\", the root)."}
	},
	"additionalProperties": false
}`

func listDirDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "list_dir",
			Description: "List a workspace directory: one entry per line, sorted by name, directories with a trailing \"/\".",
			InputSchema: []byte(listDirSchema),
		},
		Effect:    contracts.ReadOnly,
		InSandbox: true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			if err := requireSandbox("list_dir", b); err != nil {
				return nil, err
			}
			return listDir{b.Sandbox}, nil
		},
	}
}

type listDir struct{ sb contracts.SandboxAPI }

func (t listDir) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	if in.Path == "" {
		in.Path = "."
	}
	entries, err := t.sb.ListDir(ctx, in.Path)
	if err != nil {
		return failure(err)
	}
	if len(entries) == 0 {
		return contracts.ToolResult{Content: "(empty directory)"}, nil
	}
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(path.Base(e.Path))
		if e.IsDir {
			b.WriteByte('/')
		}
	}
	return contracts.ToolResult{Content: b.String()}, nil
}
