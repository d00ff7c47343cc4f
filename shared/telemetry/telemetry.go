package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of cairn's spans.
const Scope = "github.com/cairnrun/cairn"

var propagator = propagation.TraceContext{}

func init() {
	// Trace context passes through even with no exporter (a caller's
	// traceparent reaches the next hop).
	otel.SetTextMapPropagator(propagator)
}

// Tracer is cairn's tracer, from the installed provider (a no-op until
// Setup installs one).
func Tracer() trace.Tracer { return otel.Tracer(Scope) }

// Enabled reports whether the standard variables ask for trace export.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the OTLP/HTTP tracer provider when Enabled (the exporter
// reads the standard OTEL_EXPORTER_OTLP_* variables itself) and returns
// its flush-and-stop; otherwise it installs nothing and returns a no-op.
// service names the process (OTEL_SERVICE_NAME wins when set).
func Setup(ctx context.Context, getenv func(string) string, service string) (shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if !Enabled(getenv) {
		return noop, nil
	}
	// The endpoint from getenv (a flag may set it); the exporter reads the
	// other OTEL_EXPORTER_OTLP_* variables (headers, timeout, …) itself.
	var opts []otlptracehttp.Option
	if u := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	} else if u := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(u, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return noop, fmt.Errorf("telemetry: the OTLP/HTTP trace exporter: %w", err)
	}
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		service = s
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return func(ctx context.Context) error {
		return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}, nil
}

// Flush exports the spans ended so far (before a Lambda invocation
// returns: the process may be frozen right after); a no-op without an
// SDK provider.
func Flush(ctx context.Context) error {
	if tp, ok := otel.GetTracerProvider().(interface{ ForceFlush(context.Context) error }); ok {
		return tp.ForceFlush(ctx)
	}
	return nil
}

// Inject is the W3C traceparent of ctx's span ("" when it has none).
func Inject(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"]
}

// Extract is ctx carrying traceparent as its remote parent (ctx unchanged
// when traceparent is empty or malformed).
func Extract(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// FromHTTP is ctx carrying the caller's traceparent header (if any) as
// its remote parent: an API request continues the caller's trace.
func FromHTTP(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Link is a span link to the span traceparent names (none when it names
// nothing).
func Link(traceparent string) []trace.Link {
	sc := trace.SpanContextFromContext(Extract(context.Background(), traceparent))
	if !sc.IsValid() {
		return nil
	}
	return []trace.Link{{SpanContext: sc}}
}

// Fail marks span as failed with err (nil: nothing).
func Fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
