// Package telemetry is cairn's OpenTelemetry wiring: Setup installs a
// tracer provider exporting OTLP/HTTP when the standard variables ask for
// it (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
// OTEL_TRACES_EXPORTER=none turns it off; nothing cairn-specific), and
// nothing otherwise — spans then cost a no-op. The W3C trace context
// travels in queue messages (Inject, Extract: contracts.Message.Trace), so
// a turn is one trace across every phase handler, in any process or
// Lambda; Tracer is where cairn's spans come from.
//
// Metrics are Instruments (metrics.go), each defined once and recorded two
// ways: as an OTel instrument, exported as OTLP metrics when the standard
// variables ask for it (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT), and as a CloudWatch
// embedded-metric-format line when EMF is on (the functions on AWS, whose
// stdout CloudWatch Logs reads).
//
// It may import shared/contracts, the OpenTelemetry Go API and SDK (with
// its OTLP/HTTP trace and metric exporters) and the standard library.
package telemetry
