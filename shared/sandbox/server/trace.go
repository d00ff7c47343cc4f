package server

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// Every authorized request is a server span "cairn.sandboxd <method>",
// the remote child of the client's "cairn.sandbox.http <method>" span when
// the request carries a W3C traceparent header (shared/sandbox/remote
// sends one), else a root. Health and refused requests make none: a caller
// without the token puts nothing in the traces. Main installs the exporter
// (telemetry.Setup) when OTEL_EXPORTER_OTLP_ENDPOINT asks for it.

// serverSpan starts the request's span and returns the writer that records
// its status, the request carrying the span, and the span's end.
func serverSpan(w http.ResponseWriter, r *http.Request) (*statusWriter, *http.Request, func()) {
	method := routeName(r.URL.Path)
	ctx, span := telemetry.Tracer().Start(telemetry.FromHTTP(r.Context(), r.Header), "cairn.sandboxd "+method,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("cairn.sandbox.method", method)))
	sw := &statusWriter{ResponseWriter: w}
	return sw, r.WithContext(ctx), func() {
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", code))
		if code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(code))
		}
		span.End()
	}
}

// routeName is the method a path names, as the client's spans name it.
func routeName(path string) string {
	switch {
	case strings.HasPrefix(path, proto.PathCallsPrefix):
		return "calls"
	case path == proto.PathCancel:
		return "cancel"
	case path == proto.PathWorkspaceExport:
		return "workspace_export"
	case path == proto.PathWorkspaceImport:
		return "workspace_import"
	}
	if m, ok := proto.MethodOf(path); ok {
		return m
	}
	return "unknown"
}

// spanFailed records a failed call's wire code on the request's span.
func spanFailed(r *http.Request, code string) {
	trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("cairn.sandbox.error_code", code))
}

// statusWriter records the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap is the server's own writer (http.ResponseController).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// raw is the server's own writer under w: what http.MaxBytesReader needs
// to close the connection after a body over its limit.
func raw(w http.ResponseWriter) http.ResponseWriter {
	if sw, ok := w.(*statusWriter); ok {
		return sw.ResponseWriter
	}
	return w
}
