package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
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
	return exporting(getenv, "TRACES")
}

// MetricsEnabled reports whether the standard variables ask for OTLP
// metric export.
func MetricsEnabled(getenv func(string) string) bool {
	return exporting(getenv, "METRICS")
}

// exporting: signal is TRACES or METRICS.
func exporting(getenv func(string) string, signal string) bool {
	if strings.EqualFold(getenv("OTEL_"+signal+"_EXPORTER"), "none") || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// endpoint is the OTLP/HTTP URL of signal (path: v1/traces, v1/metrics):
// its own variable, else the base endpoint with the path appended.
func endpoint(getenv func(string) string, signal, path string) string {
	if u := getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"); u != "" {
		return u
	}
	if u := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); u != "" {
		return strings.TrimRight(u, "/") + "/" + path
	}
	return ""
}

// Setup installs the OTLP/HTTP tracer provider when Enabled and the OTLP/
// HTTP meter provider when MetricsEnabled (the exporters read the other
// standard OTEL_EXPORTER_OTLP_* variables themselves; the metric reader
// exports every OTEL_METRIC_EXPORT_INTERVAL, 60 s by default) and returns
// their flush-and-stop; otherwise it installs nothing and the returned
// function is a no-op. service names the process (OTEL_SERVICE_NAME wins
// when set).
func Setup(ctx context.Context, getenv func(string) string, service string) (shutdown func(context.Context) error, err error) {
	captureContent.Store(contentOptIn(getenv(EnvCaptureContent)))
	var stops []func(context.Context) error
	shutdown = func(ctx context.Context) error {
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop(ctx))
		}
		return errors.Join(errs...)
	}
	if !Enabled(getenv) && !MetricsEnabled(getenv) {
		return shutdown, nil
	}
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		service = s
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		res = resource.Default()
	}
	if Enabled(getenv) {
		// The endpoint from getenv (a flag may set it).
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint(getenv, "TRACES", "v1/traces")))
		if err != nil {
			return shutdown, fmt.Errorf("telemetry: the OTLP/HTTP trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		otel.SetTracerProvider(tp)
		stops = append(stops, func(ctx context.Context) error { return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx)) })
	}
	if MetricsEnabled(getenv) {
		exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(endpoint(getenv, "METRICS", "v1/metrics")))
		if err != nil {
			return shutdown, fmt.Errorf("telemetry: the OTLP/HTTP metric exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		SetMeterProvider(mp)
		stops = append(stops, func(ctx context.Context) error { return errors.Join(mp.ForceFlush(ctx), mp.Shutdown(ctx)) })
	}
	return shutdown, nil
}

// EnvCaptureContent is the OpenTelemetry GenAI instrumentations' opt-in to
// message content on spans: SPAN_ONLY or SPAN_AND_EVENT (or true) puts a
// model call's last input message and its output, and a tool call's input
// and result, on their spans, each cut at MaxContent bytes. Anything
// else (the default): no prompt, output or tool text is ever an attribute.
const EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// MaxContent bounds one captured content attribute.
const MaxContent = 8 << 10

var captureContent atomic.Bool

func contentOptIn(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "SPAN_ONLY", "SPAN_AND_EVENT", "TRUE":
		return true
	}
	return false
}

// CaptureContent reports whether the operator opted in to content on
// spans (EnvCaptureContent, read by Setup).
func CaptureContent() bool { return captureContent.Load() }

// Content is s fit for a content attribute: at most MaxContent bytes, cut
// at a rune boundary, marked when cut.
func Content(s string) string {
	if len(s) <= MaxContent {
		return s
	}
	cut := MaxContent
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[cut]"
}

// Flush exports the spans ended and the metrics recorded so far (before a
// Lambda invocation returns: the process may be frozen right after); a
// no-op without an SDK provider.
func Flush(ctx context.Context) error {
	type flusher interface{ ForceFlush(context.Context) error }
	var errs []error
	if tp, ok := otel.GetTracerProvider().(flusher); ok {
		errs = append(errs, tp.ForceFlush(ctx))
	}
	if mp, ok := otel.GetMeterProvider().(flusher); ok {
		errs = append(errs, mp.ForceFlush(ctx))
	}
	return errors.Join(errs...)
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

// SetupFunction is what every Lambda function's boot does: Setup named
// after the function (AWS_LAMBDA_FUNCTION_NAME; "cairn" outside Lambda) —
// traces and metrics over OTLP when the standard OTEL_* variables ask — and,
// under Lambda, metrics as embedded-metric-format lines on stdout, which
// CloudWatch Logs turns into metrics (namespace cairn; the dashboard in
// infra/). Each handler flushes before its invocation returns (lambdafn).
func SetupFunction(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	service := getenv("AWS_LAMBDA_FUNCTION_NAME")
	if service == "" {
		service = "cairn"
	}
	if _, err := Setup(ctx, getenv, service); err != nil {
		return err
	}
	if getenv("AWS_LAMBDA_FUNCTION_NAME") != "" {
		EMF(stdout)
	}
	return nil
}
