// Package telemetry is cairn's OpenTelemetry wiring: Setup installs a
// tracer provider exporting OTLP/HTTP when the standard variables ask for
// it (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
// OTEL_TRACES_EXPORTER=none turns it off; nothing cairn-specific), and
// nothing otherwise — spans then cost a no-op. The W3C trace context
// travels in queue messages (Inject, Extract: contracts.Message.Trace), so
// a turn is one trace across every phase handler, in any process or
// Lambda; Tracer is where cairn's spans come from.
//
// It may import shared/contracts, the OpenTelemetry Go API and SDK (with
// its OTLP/HTTP trace exporter) and the standard library.
package telemetry
