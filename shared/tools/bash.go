package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
)

const bashSchema = `{
	"type": "object",
	"properties": {
		"command": {"type": "string", "minLength": 1, "description": "Shell command, run with bash -c in the workspace root."},
		"timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Kill the command (and everything it started) after this many seconds (default: the sandbox default)."}
	},
	"required": ["command"],
	"additionalProperties": false
}`

func bashDef() contracts.ToolDef {
	return contracts.ToolDef{
		ToolSpec: contracts.ToolSpec{
			Name:        "bash",
			Description: "Run a bash command in the workspace. Returns stdout, then stderr after a [stderr] line, then [exit code N] when it fails or [timed out].",
			InputSchema: []byte(bashSchema),
		},
		Effect:    contracts.Mutating,
		InSandbox: true,
		Factory: func(b contracts.Binding) (contracts.Tool, error) {
			if err := requireSandbox("bash", b); err != nil {
				return nil, err
			}
			return bashTool{b.Sandbox}, nil
		},
	}
}

type bashTool struct{ sb contracts.SandboxAPI }

func (t bashTool) Run(ctx context.Context, call contracts.ToolCall) (contracts.ToolResult, error) {
	var in struct {
		Command        string `json:"command"`
		TimeoutSeconds number `json:"timeout_seconds"`
	}
	if err := decode(call.Input, &in); err != nil {
		return badInput(call, err), nil
	}
	res, err := t.sb.Exec(ctx, contracts.ExecRequest{
		Command: in.Command,
		Timeout: time.Duration(in.TimeoutSeconds) * time.Second,
		CallID:  effectID(call),
		// The command may continue the call's trace (and gets nothing
		// else of the runtime).
		Traceparent: telemetry.Inject(ctx),
	})
	if err != nil {
		return failure(err)
	}
	describeExit(ctx, res)
	return execResult(res), nil
}

// describeExit puts a command's exit status on the tool call's span.
func describeExit(ctx context.Context, res contracts.ExecResult) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("cairn.tool.exit_code", res.ExitCode), attribute.Bool("cairn.tool.timed_out", res.TimedOut))
}

// execResult renders a finished command deterministically: stdout, stderr
// under "[stderr]", then "[timed out]" or "[exit code N]" (non-zero only).
// A timeout or a non-zero exit is an IsError result.
func execResult(res contracts.ExecResult) contracts.ToolResult {
	var b strings.Builder
	b.WriteString(res.Stdout)
	section := func(s string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	if res.Stderr != "" {
		section("[stderr]\n" + res.Stderr)
	}
	switch {
	case res.TimedOut:
		section("[timed out]")
	case res.ExitCode != 0:
		section(fmt.Sprintf("[exit code %d]", res.ExitCode))
	}
	if b.Len() == 0 {
		b.WriteString("(no output)")
	}
	return contracts.ToolResult{Content: b.String(), IsError: res.TimedOut || res.ExitCode != 0}
}
