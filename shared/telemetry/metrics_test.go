package telemetry

import (
	"context"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestInstrumentsAreOTelMetrics: the same records reach an installed
// meter provider as OTel instruments, with their dimensions as attributes
// (a reader installed after instruments were first used still gets them).
func TestInstrumentsAreOTelMetrics(t *testing.T) {
	ToolFailures.Record(context.Background(), 1, "before") // on the no-op provider
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prev := otel.GetMeterProvider()
	SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(prev); metering.Store(false) })

	ctx := WithFunction(context.Background(), "tools")
	ToolDuration.Record(ctx, 12.5, "bash", "ok")
	ToolDuration.Record(ctx, 7.5, "bash", "ok")
	ToolFailures.Record(ctx, 1, "bash")
	ModelTokens.Record(ctx, 40, "anthropic", "claude", "input")
	ToolFailures.Record(ctx, 1, strings.Repeat("a", 127)+"é") // cut inside a character: still valid UTF-8

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	h, ok := got[ToolDuration.Name].(metricdata.Histogram[float64])
	if !ok || len(h.DataPoints) != 1 || h.DataPoints[0].Count != 2 || h.DataPoints[0].Sum != 20 {
		t.Fatalf("%s: %#v", ToolDuration.Name, got[ToolDuration.Name])
	}
	want := attribute.NewSet(attribute.String("function", "tools"), attribute.String("tool", "bash"), attribute.String("outcome", "ok"))
	if !h.DataPoints[0].Attributes.Equals(&want) {
		t.Errorf("attributes %v, want %v", h.DataPoints[0].Attributes.ToSlice(), want.ToSlice())
	}
	c, ok := got[ToolFailures.Name].(metricdata.Sum[float64])
	if !ok || len(c.DataPoints) != 2 || c.DataPoints[0].Value != 1 || !c.IsMonotonic {
		t.Errorf("%s: %#v", ToolFailures.Name, got[ToolFailures.Name])
	}
	for _, dp := range c.DataPoints {
		for _, kv := range dp.Attributes.ToSlice() {
			if !utf8.ValidString(kv.Value.AsString()) {
				t.Errorf("attribute %s is not valid UTF-8: %q (an OTLP export would fail)", kv.Key, kv.Value.AsString())
			}
		}
	}
	if s, ok := got[ModelTokens.Name].(metricdata.Sum[float64]); !ok || s.DataPoints[0].Value != 40 {
		t.Errorf("%s: %#v", ModelTokens.Name, got[ModelTokens.Name])
	}
}

func TestMetricsEnabledFollowsTheStandardVariables(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:4318/v1/metrics"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_METRICS_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := MetricsEnabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: MetricsEnabled = %v", c.env, got)
		}
	}
	if got := endpoint(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318/"}[k]
	}, "METRICS", "v1/metrics"); got != "http://h:4318/v1/metrics" {
		t.Errorf("endpoint %q", got)
	}
}

// BenchmarkRecord: one record with nothing installed (the default), and
// with EMF on (a Lambda function) writing to a discarding writer.
func BenchmarkRecord(b *testing.B) {
	ctx := WithFunction(context.Background(), "model")
	b.Run("off", func(b *testing.B) {
		for b.Loop() {
			ToolDuration.Record(ctx, 12.5, "bash", "ok")
		}
	})
	b.Run("emf", func(b *testing.B) {
		EMF(io.Discard)
		defer EMF(nil)
		for b.Loop() {
			ToolDuration.Record(ctx, 12.5, "bash", "ok")
		}
	})
}
