package tools

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

const writeFileSchema = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root; parent directories are created."},
		"content": {"type": "string", "description": "The full new content of the file (or the text to append)."},
		"append": {"type": "boolean", "description": "Append to the file instead of replacing it (default false)."}
	},
	"required": ["path", "content"],
	"additionalProperties": false
}`

func writeFileDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "write_file",
			Description: "Create or replace a file in the workspace, or append to it.",
			InputSchema: []byte(writeFileSchema),
		},
		Effect:    contracts.Mutating,
		InSandbox: true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			if err := requireSandbox("write_file", b); err != nil {
				return nil, err
			}
			return writeFile{b.Sandbox}, nil
		},
	}
}

type writeFile struct{ sb contracts.SandboxAPI }

func (t writeFile) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	var in struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Append  bool   `json:"append"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	err := t.sb.WriteFile(ctx, contracts.WriteFileRequest{Path: in.Path, Content: in.Content, Append: in.Append, CallID: effectID(call)})
	if err != nil {
		return failure(err)
	}
	verb := "wrote"
	if in.Append {
		verb = "appended"
	}
	return contracts.ToolResult{Content: fmt.Sprintf("%s %d bytes to %s", verb, len(in.Content), in.Path)}, nil
}
