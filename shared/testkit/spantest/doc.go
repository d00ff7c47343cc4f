// Package spantest records the spans a test makes: Record installs an SDK
// tracer provider with an in-memory exporter for the test (the no-op one
// again afterwards), Attr reads a span's attribute.
//
// It may import the OpenTelemetry API and SDK (its in-memory exporter)
// and the standard library (testing included).
package spantest
