package tools

import (
	"context"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
)

const pythonSchema = `{
	"type": "object",
	"properties": {
		"code": {"type": "string", "description": "Python 3 source, run in the workspace root; print what you want to see."},
		"timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Kill the script after this many seconds (default: the sandbox default)."}
	},
	"required": ["code"],
	"additionalProperties": false
}`

func pythonDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "python",
			Description: "Run a Python 3 script in the workspace. Returns stdout, then stderr after a [stderr] line, then [exit code N] when it fails or [timed out].",
			InputSchema: []byte(pythonSchema),
		},
		Effect:    contracts.Mutating,
		InSandbox: true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			if err := requireSandbox("python", b); err != nil {
				return nil, err
			}
			return pythonTool{b.Sandbox}, nil
		},
	}
}

type pythonTool struct{ sb contracts.SandboxAPI }

func (t pythonTool) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	var in struct {
		Code           string `json:"code"`
		TimeoutSeconds number `json:"timeout_seconds"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	res, err := t.sb.RunScript(ctx, contracts.RunScriptRequest{
		Language: "python",
		Source:   in.Code,
		Timeout:  time.Duration(in.TimeoutSeconds) * time.Second,
		CallID:   effectID(call),
		// As bash's: the call's trace, for the script to continue.
		Traceparent: telemetry.Inject(ctx),
	})
	if err != nil {
		return failure(err)
	}
	describeExit(ctx, res)
	return execResult(res), nil
}
