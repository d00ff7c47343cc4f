// Package tools holds the static tool registry and the built-in tools
// (docs/DESIGN.md §5): read_file, write_file, edit_file, list_dir, glob,
// grep, bash and python, all running through a contracts.SandboxAPI, and
// the opt-in run_workflow, which starts a workflow run through the
// binding's contracts.WorkflowStarter and parks the turn until it ends.
//
// A definition is a context-free value (name, description, JSON Schema,
// effect, factory). Registry.Bind rebuilds a session's toolset from its
// spec (tool names + per-tool config) and a Binding, in any process; no
// closure over live objects survives between phases. Toolset.Call validates
// the input against the tool's schema (compiled once per Registry), runs the
// tool and caps its output. Tool output is deterministic text: no durations,
// timestamps or host paths.
//
// A failure the model should see (missing file, path outside the workspace,
// invalid input, a failing command) is a ToolResult with IsError; a returned
// error is an infrastructure failure.
//
// It may import shared/contracts, shared/ids, shared/telemetry (a command gets
// its call's TRACEPARENT), the OpenTelemetry API (a command's exit status on
// its call's span), the standard library and the jsonschema validator. It never imports a sandbox implementation.
//
// # Usage
//
//	reg := tools.NewRegistry()
//	ts, err := reg.Bind(spec.Tools, contracts.Binding{Sandbox: sb, SessionID: id})
//	if err != nil {
//		return err // unknown tool or bad config: contracts.ErrInvalid
//	}
//	res, err := ts.Call(ctx, contracts.ToolCall{
//		ID: "call-1", Name: "read_file", Input: json.RawMessage(`{"path":"notes.txt"}`),
//	})
package tools
