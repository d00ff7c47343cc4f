package placement

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// Sandbox operations as spans. Every call the runtime makes on a sandbox
// passes through the Router (Acquire hands out Traced sandboxes), so every
// kind gets the same spans: "cairn.sandbox acquire" and "cairn.sandbox
// release" around the provider's, and "cairn.sandbox <method>" around each
// SandboxAPI method (read_file, …, exec, run_script; also call_outcome,
// mcp and save_workspace), with the kind, the session, the call's effect
// id where it has one, and a command's exit code. No path, command, input
// or output is an attribute. A remote sandbox's HTTP round trip is a child
// span of the client's ("cairn.sandbox.http <method>",
// shared/sandbox/remote), and sandboxd's server span a child of that.

// Traced is api with a span around each of its methods, keeping exactly
// the optional interfaces api implements (contracts.CallLedger,
// contracts.MCPHost, contracts.DurableWorkspace): callers test for them.
func Traced(api contracts.SandboxAPI, kind, sessionID string) contracts.SandboxAPI {
	t := &traced{api: api, kind: kind, sessionID: sessionID}
	_, l := api.(contracts.CallLedger)
	_, m := api.(contracts.MCPHost)
	_, d := api.(contracts.DurableWorkspace)
	L, M, D := tracedLedger{t}, tracedMCP{t}, tracedDurable{t}
	switch {
	case l && m && d:
		return struct {
			*traced
			tracedLedger
			tracedMCP
			tracedDurable
		}{t, L, M, D}
	case l && m:
		return struct {
			*traced
			tracedLedger
			tracedMCP
		}{t, L, M}
	case l && d:
		return struct {
			*traced
			tracedLedger
			tracedDurable
		}{t, L, D}
	case m && d:
		return struct {
			*traced
			tracedMCP
			tracedDurable
		}{t, M, D}
	case l:
		return struct {
			*traced
			tracedLedger
		}{t, L}
	case m:
		return struct {
			*traced
			tracedMCP
		}{t, M}
	case d:
		return struct {
			*traced
			tracedDurable
		}{t, D}
	}
	return t
}

// opSpan starts the span of one sandbox operation.
func opSpan(ctx context.Context, kind, sessionID, method string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs, attribute.String("cairn.sandbox.method", method), attribute.String("cairn.sandbox.kind", kind),
		attribute.String("cairn.session_id", sessionID))
	return telemetry.Tracer().Start(ctx, "cairn.sandbox "+method, trace.WithAttributes(attrs...))
}

func done(span trace.Span, err error) {
	telemetry.Fail(span, err)
	span.End()
}

// effect is the effect id attribute of a mutating call that has one.
func effect(callID string) []attribute.KeyValue {
	if callID == "" {
		return nil
	}
	return []attribute.KeyValue{attribute.String("cairn.effect_id", callID)}
}

func exited(span trace.Span, r contracts.ExecResult, err error) {
	if err == nil {
		span.SetAttributes(attribute.Int("cairn.sandbox.exit_code", r.ExitCode), attribute.Bool("cairn.sandbox.timed_out", r.TimedOut),
			attribute.Bool("cairn.sandbox.truncated", r.Truncated))
	}
}

type traced struct {
	api             contracts.SandboxAPI
	kind, sessionID string
}

func (t *traced) span(ctx context.Context, method string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return opSpan(ctx, t.kind, t.sessionID, method, attrs...)
}

func (t *traced) ReadFile(ctx context.Context, r contracts.ReadFileRequest) (_ contracts.ReadFileResult, err error) {
	ctx, span := t.span(ctx, "read_file")
	defer func() { done(span, err) }()
	return t.api.ReadFile(ctx, r)
}

func (t *traced) WriteFile(ctx context.Context, r contracts.WriteFileRequest) (err error) {
	ctx, span := t.span(ctx, "write_file", effect(r.CallID)...)
	defer func() { done(span, err) }()
	return t.api.WriteFile(ctx, r)
}

func (t *traced) EditFile(ctx context.Context, r contracts.EditFileRequest) (_ contracts.EditFileResult, err error) {
	ctx, span := t.span(ctx, "edit_file", effect(r.CallID)...)
	defer func() { done(span, err) }()
	return t.api.EditFile(ctx, r)
}

func (t *traced) ListDir(ctx context.Context, path string) (_ []contracts.FileInfo, err error) {
	ctx, span := t.span(ctx, "list_dir")
	defer func() { done(span, err) }()
	return t.api.ListDir(ctx, path)
}

func (t *traced) Stat(ctx context.Context, path string) (_ contracts.FileInfo, err error) {
	ctx, span := t.span(ctx, "stat")
	defer func() { done(span, err) }()
	return t.api.Stat(ctx, path)
}

func (t *traced) Remove(ctx context.Context, path string, recursive bool) (err error) {
	ctx, span := t.span(ctx, "remove")
	defer func() { done(span, err) }()
	return t.api.Remove(ctx, path, recursive)
}

func (t *traced) MakeDir(ctx context.Context, path string) (err error) {
	ctx, span := t.span(ctx, "make_dir")
	defer func() { done(span, err) }()
	return t.api.MakeDir(ctx, path)
}

func (t *traced) Glob(ctx context.Context, pattern string) (_ []string, err error) {
	ctx, span := t.span(ctx, "glob")
	defer func() { done(span, err) }()
	return t.api.Glob(ctx, pattern)
}

func (t *traced) Grep(ctx context.Context, r contracts.GrepRequest) (_ contracts.GrepResult, err error) {
	ctx, span := t.span(ctx, "grep")
	defer func() { done(span, err) }()
	return t.api.Grep(ctx, r)
}

func (t *traced) Exec(ctx context.Context, r contracts.ExecRequest) (res contracts.ExecResult, err error) {
	ctx, span := t.span(ctx, "exec", effect(r.CallID)...)
	defer func() { exited(span, res, err); done(span, err) }()
	return t.api.Exec(ctx, r)
}

func (t *traced) RunScript(ctx context.Context, r contracts.RunScriptRequest) (res contracts.ExecResult, err error) {
	ctx, span := t.span(ctx, "run_script", effect(r.CallID)...)
	defer func() { exited(span, res, err); done(span, err) }()
	return t.api.RunScript(ctx, r)
}

type tracedLedger struct{ t *traced }

func (l tracedLedger) CallOutcome(ctx context.Context, callID string) (_ contracts.CallOutcome, err error) {
	ctx, span := l.t.span(ctx, "call_outcome", effect(callID)...)
	defer func() { done(span, err) }()
	return l.t.api.(contracts.CallLedger).CallOutcome(ctx, callID)
}

type tracedMCP struct{ t *traced }

func (m tracedMCP) MCP(ctx context.Context, r contracts.MCPRequest) (_ contracts.MCPResponse, err error) {
	ctx, span := m.t.span(ctx, "mcp", attribute.String("cairn.mcp.method", r.Method))
	defer func() { done(span, err) }()
	return m.t.api.(contracts.MCPHost).MCP(ctx, r)
}

type tracedDurable struct{ t *traced }

func (d tracedDurable) WorkspaceNotice() string {
	return d.t.api.(contracts.DurableWorkspace).WorkspaceNotice()
}

func (d tracedDurable) NoticeGiven(ctx context.Context) error {
	return d.t.api.(contracts.DurableWorkspace).NoticeGiven(ctx)
}

func (d tracedDurable) SaveWorkspace(ctx context.Context) (err error) {
	ctx, span := d.t.span(ctx, "save_workspace")
	defer func() { done(span, err) }()
	return d.t.api.(contracts.DurableWorkspace).SaveWorkspace(ctx)
}
