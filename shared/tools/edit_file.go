package tools

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

const editFileSchema = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root."},
		"old_string": {"type": "string", "minLength": 1, "description": "Exact text to replace; it must occur exactly once unless replace_all is set."},
		"new_string": {"type": "string", "description": "Replacement text."},
		"replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
	},
	"required": ["path", "old_string", "new_string"],
	"additionalProperties": false
}`

func editFileDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "edit_file",
			Description: "Replace exact text in a workspace file. old_string must match exactly once (include surrounding lines to make it unique) unless replace_all is true.",
			InputSchema: []byte(editFileSchema),
		},
		Effect:    contracts.Mutating,
		InSandbox: true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			if err := requireSandbox("edit_file", b); err != nil {
				return nil, err
			}
			return editFile{b.Sandbox}, nil
		},
	}
}

type editFile struct{ sb contracts.SandboxAPI }

func (t editFile) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	var in struct {
		Path       string `json:"path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	if in.OldString == in.NewString {
		return contracts.ToolResult{Content: "old_string and new_string are identical; nothing to change", IsError: true}, nil
	}
	res, err := t.sb.EditFile(ctx, contracts.EditFileRequest{Path: in.Path, Old: in.OldString, New: in.NewString, All: in.ReplaceAll, CallID: effectID(call)})
	if err != nil {
		return failure(err)
	}
	noun := "occurrences"
	if res.Replacements == 1 {
		noun = "occurrence"
	}
	return contracts.ToolResult{Content: fmt.Sprintf("replaced %d %s in %s", res.Replacements, noun, in.Path)}, nil
}
