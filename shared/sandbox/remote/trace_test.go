package remote_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/testkit/spantest"
)

// TestRoundTripsAreSpans: a call is one client span under the caller's,
// with the endpoint's host, the attempts made, the last status and each
// retry as an event; sandboxd continues the trace from the traceparent
// header with a server span per request it serves; a workspace stream is
// a span too; the token is in no attribute, and health (no token) makes no
// server span.
func TestRoundTripsAreSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	url, _ := flaky(t, t.TempDir(), 1) // the first request answered 503, then sandboxd
	c := newClient(t, url, remote.Options{})
	ctx, caller := otel.Tracer("test").Start(context.Background(), "caller")
	if _, err := c.Exec(ctx, contracts.ExecRequest{Command: "echo hi", CallID: "call-1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ExportWorkspace(ctx, nil, "", func(r io.Reader) error { _, err := io.Copy(io.Discard, r); return err }); err != nil {
		t.Fatal(err)
	}
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	caller.End()

	spans := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = append(spans[s.Name], s)
		if s.SpanContext.TraceID() != caller.SpanContext().TraceID() {
			t.Errorf("%s is in another trace", s.Name)
		}
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.Emit(), testToken) {
				t.Errorf("%s carries the token in %s", s.Name, kv.Key)
			}
		}
	}
	one := func(name string) tracetest.SpanStub {
		t.Helper()
		if len(spans[name]) != 1 {
			t.Fatalf("%d spans %s, want 1; spans: %v", len(spans[name]), name, spans)
		}
		return spans[name][0]
	}
	exec := one("cairn.sandbox.http exec")
	if exec.SpanKind != trace.SpanKindClient || exec.Parent.SpanID() != caller.SpanContext().SpanID() {
		t.Errorf("exec client span: kind %v, parent %v", exec.SpanKind, exec.Parent.SpanID())
	}
	for key, want := range map[string]int64{"cairn.sandbox.attempts": 2, "http.response.status_code": 200} {
		if v, _ := spantest.Attr(exec, key); v.AsInt64() != want {
			t.Errorf("exec client span %s = %v, want %d", key, v.Emit(), want)
		}
	}
	if v, _ := spantest.Attr(exec, "server.address"); v.AsString() != "127.0.0.1" {
		t.Errorf("server.address %q", v.AsString())
	}
	if len(exec.Events) != 1 || exec.Events[0].Name != "retry" {
		t.Errorf("exec client span events %v, want one retry", exec.Events)
	}
	served := one("cairn.sandboxd exec")
	if served.SpanKind != trace.SpanKindServer || served.Parent.SpanID() != exec.SpanContext.SpanID() || !served.Parent.IsRemote() {
		t.Errorf("server span: kind %v, parent %v (remote %v), want the client span's remote child", served.SpanKind, served.Parent.SpanID(), served.Parent.IsRemote())
	}
	export, exported := one("cairn.sandbox.http workspace_export"), one("cairn.sandboxd workspace_export")
	if exported.Parent.SpanID() != export.SpanContext.SpanID() {
		t.Error("the export's server span is not the child of its client span")
	}
	one("cairn.sandbox.http health")
	if n := len(spans["cairn.sandboxd health"]) + len(spans["cairn.sandboxd unknown"]); n != 0 {
		t.Errorf("%d server spans for health", n)
	}
}
