package remote

import (
	"context"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/telemetry"
)

// Round trips as spans. Every request to sandboxd is one client span,
// "cairn.sandbox.http <method>" (method: the protocol's name, "exec",
// "read_file", …, or "health", "calls", "cancel", "workspace_export",
// "workspace_import"): a method call with all its retries, each retry an
// event "retry" (the attempt that failed and why), the attempts made and
// the last HTTP status as attributes, the endpoint's host and port (never
// its token or path). Each attempt sends the span's W3C traceparent header,
// and sandboxd continues the trace with a server span per request
// ("cairn.sandboxd <method>", shared/sandbox/server). The sandbox
// operation above it — "cairn.sandbox <method>", whatever the kind — is
// shared/sandbox/placement's.

// roundTrip is the span of one request (with its retries).
type roundTrip struct{ span trace.Span }

func (c *Client) roundTrip(ctx context.Context, method string) (context.Context, roundTrip) {
	attrs := []attribute.KeyValue{attribute.String("cairn.sandbox.method", method)}
	if host, port, err := net.SplitHostPort(c.host); err == nil {
		attrs = append(attrs, attribute.String("server.address", host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	} else {
		attrs = append(attrs, attribute.String("server.address", c.host))
	}
	ctx, span := telemetry.Tracer().Start(ctx, "cairn.sandbox.http "+method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, roundTrip{span}
}

// attempt records that attempt n (1-based) is being sent.
func (r roundTrip) attempt(n int) { r.span.SetAttributes(attribute.Int("cairn.sandbox.attempts", n)) }

// retry records that attempt n failed with err and is retried.
func (r roundTrip) retry(n int, err error) {
	r.span.AddEvent("retry", trace.WithAttributes(attribute.Int("cairn.sandbox.attempt", n), attribute.String("error.message", err.Error())))
}

// status records an answer's HTTP status.
func (r roundTrip) status(code int) {
	r.span.SetAttributes(attribute.Int("http.response.status_code", code))
}

// inject puts the span's trace context on a request.
func (roundTrip) inject(ctx context.Context, h http.Header) {
	if tp := telemetry.Inject(ctx); tp != "" {
		h.Set("traceparent", tp)
	}
}

// end ends the span, failed when err is set.
func (r roundTrip) end(err error) {
	telemetry.Fail(r.span, err)
	r.span.End()
}
