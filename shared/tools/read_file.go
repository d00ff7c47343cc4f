package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

const readFileSchema = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root."},
		"offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start reading at (default 0)."},
		"limit": {"type": "integer", "minimum": 1, "description": "Maximum number of bytes to read (default and maximum: the sandbox read cap)."}
	},
	"required": ["path"],
	"additionalProperties": false
}`

func readFileDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "read_file",
			Description: "Read a text file from the workspace. Large files are returned in parts: a note at the end tells the offset to continue from.",
			InputSchema: []byte(readFileSchema),
		},
		Effect:    contracts.ReadOnly,
		InSandbox: true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			if err := requireSandbox("read_file", b); err != nil {
				return nil, err
			}
			return readFile{b.Sandbox}, nil
		},
	}
}

type readFile struct{ sb contracts.SandboxAPI }

func (t readFile) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	var in struct {
		Path   string `json:"path"`
		Offset number `json:"offset"`
		Limit  number `json:"limit"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	res, err := t.sb.ReadFile(ctx, contracts.ReadFileRequest{Path: in.Path, Offset: int64(in.Offset), Limit: int64(in.Limit)})
	if err != nil {
		return failure(err)
	}
	off := int64(in.Offset)
	switch {
	case res.Size == 0:
		return contracts.ToolResult{Content: "(empty file)"}, nil
	case res.Content == "" && off >= res.Size:
		return contracts.ToolResult{Content: fmt.Sprintf("(nothing at offset %d: %s is %d bytes)", off, in.Path, res.Size)}, nil
	case strings.IndexByte(res.Content[:min(len(res.Content), 8<<10)], 0) >= 0:
		return contracts.ToolResult{Content: fmt.Sprintf("(%s is a binary file of %d bytes; not shown)", in.Path, res.Size)}, nil
	}
	out := res.Content
	if res.Truncated {
		end := off + int64(len(res.Content))
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += fmt.Sprintf("[showing bytes %d-%d of %d; continue with offset %d]", off, end, res.Size, end)
	}
	return contracts.ToolResult{Content: out}, nil
}
