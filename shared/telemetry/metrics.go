package telemetry

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Kind is how an instrument aggregates.
type Kind int

const (
	Histogram Kind = iota // a distribution (durations, sizes)
	Counter               // a sum of increments
)

// Instrument is one of cairn's metrics: one definition, recorded as an OTel
// instrument (exported as OTLP metrics when Setup installs a meter
// provider) and as a CloudWatch embedded-metric-format line when EMF is on
// (the functions on AWS). Dims names its dimensions in the order Record
// takes their values; every record also carries the dimension "function"
// (WithFunction, "cairn" by default).
type Instrument struct {
	Name string
	Unit string // a CloudWatch unit: Milliseconds or Count
	Help string
	Kind Kind
	Dims []string

	mu       sync.Mutex
	provider metric.MeterProvider
	hist     metric.Float64Histogram
	count    metric.Float64Counter
}

// The instruments. Their names, units and dimensions are a contract with
// the dashboard in infra/ (infra/stack/dashboard.go) and the README.
var (
	PhaseDuration = &Instrument{Name: "cairn.phase.duration", Unit: "Milliseconds", Kind: Histogram, Dims: []string{"phase", "outcome"},
		Help: "one phase handler run, from receipt to return (outcome ok|error)"}
	QueueAge = &Instrument{Name: "cairn.queue.age", Unit: "Milliseconds", Kind: Histogram, Dims: []string{"phase"},
		Help: "how long a phase's message waited, from its send to its handler's start"}
	ModelLatency = &Instrument{Name: "cairn.model.latency", Unit: "Milliseconds", Kind: Histogram, Dims: []string{"provider", "model"},
		Help: "one model call, request to last event"}
	ModelTTFT = &Instrument{Name: "cairn.model.ttft", Unit: "Milliseconds", Kind: Histogram, Dims: []string{"provider", "model"},
		Help: "time to a model call's first streamed event"}
	ModelTokens = &Instrument{Name: "cairn.model.tokens", Unit: "Count", Kind: Counter, Dims: []string{"provider", "model", "direction"},
		Help: "model tokens (direction input|output)"}
	ToolDuration = &Instrument{Name: "cairn.tool.duration", Unit: "Milliseconds", Kind: Histogram, Dims: []string{"tool", "outcome"},
		Help: "one tool call (outcome ok|error: an error result or a failed call|cancelled: its run gave up on it)"}
	ToolFailures = &Instrument{Name: "cairn.tool.failures", Unit: "Count", Kind: Counter, Dims: []string{"tool"},
		Help: "tool calls that returned an error result or failed"}
	LeaseConflicts = &Instrument{Name: "cairn.lease.conflicts", Unit: "Count", Kind: Counter, Dims: []string{"phase"},
		Help: "conditional writes of a turn that another writer won (a lease or an advance)"}
	RepairActions = &Instrument{Name: "cairn.repair.actions", Unit: "Count", Kind: Counter, Dims: []string{"action"},
		Help: "repair's actions (re-drives, lease breaks, …)"}
	Turns = &Instrument{Name: "cairn.turns", Unit: "Count", Kind: Counter, Dims: []string{"outcome", "reason"},
		Help: "turns ended (outcome committed|failed|cancelled; reason: the failure's class)"}
)

// Instruments lists every instrument.
var Instruments = []*Instrument{PhaseDuration, QueueAge, ModelLatency, ModelTTFT, ModelTokens, ToolDuration, ToolFailures, LeaseConflicts, RepairActions, Turns}

// otelUnit is the UCUM unit OTel expects.
func (in *Instrument) otelUnit() string {
	if in.Unit == "Milliseconds" {
		return "ms"
	}
	return "1"
}

// instruments are in's OTel instruments on the installed meter provider
// (made again when a different provider is installed: the global meter
// delegates only to the first one).
func (in *Instrument) instruments() (metric.Float64Histogram, metric.Float64Counter) {
	mp := otel.GetMeterProvider()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.provider != mp || (in.hist == nil && in.count == nil) {
		m := mp.Meter(Scope)
		in.hist, in.count = nil, nil
		switch in.Kind {
		case Histogram:
			in.hist, _ = m.Float64Histogram(in.Name, metric.WithUnit(in.otelUnit()), metric.WithDescription(in.Help))
		default:
			in.count, _ = m.Float64Counter(in.Name, metric.WithUnit(in.otelUnit()), metric.WithDescription(in.Help))
		}
		in.provider = mp
	}
	return in.hist, in.count
}

type functionKey struct{}

// WithFunction is ctx whose records carry function as their "function"
// dimension (a Lambda handler names its role: api, model, tools, …).
func WithFunction(ctx context.Context, function string) context.Context {
	return context.WithValue(ctx, functionKey{}, function)
}

func functionOf(ctx context.Context) string {
	if f, _ := ctx.Value(functionKey{}).(string); f != "" {
		return f
	}
	return "cairn"
}

// MaxDimLength bounds a dimension's value (CloudWatch allows 1024; a value
// is a name, never free text).
const MaxDimLength = 128

// dim is v fit for a dimension value: printable ASCII (CloudWatch's rule;
// anything else becomes "_", so a cut never splits a character and an
// OTLP export never meets invalid UTF-8), non-empty, bounded. Callers
// bound the number of distinct values (names the deployment knows, never
// what a tenant or a model made up).
func dim(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return "none"
	}
	b := make([]byte, 0, min(len(v), MaxDimLength))
	for i := 0; i < len(v) && len(b) < MaxDimLength; i++ {
		c := v[i]
		if c < 0x20 || c > 0x7e {
			c = '_'
			for i+1 < len(v) && v[i+1]&0xC0 == 0x80 { // one _ per character
				i++
			}
		}
		b = append(b, c)
	}
	return string(b)
}

// metering is whether a meter provider was installed (SetMeterProvider):
// with neither it nor EMF, Record returns at once.
var metering atomic.Bool

// SetMeterProvider installs mp as the global meter provider that
// instruments record to (Setup does, for OTLP; tests, for a reader).
func SetMeterProvider(mp metric.MeterProvider) {
	otel.SetMeterProvider(mp)
	metering.Store(true)
}

// Record records v with the dimension values dims (in in.Dims's order;
// a missing value is "none", extra values are ignored).
func (in *Instrument) Record(ctx context.Context, v float64, dims ...string) {
	s := sink.Load()
	if s == nil && !metering.Load() {
		return // nothing would see it
	}
	values := make([]string, len(in.Dims))
	attrs := make([]attribute.KeyValue, 0, len(in.Dims)+1)
	attrs = append(attrs, attribute.String("function", functionOf(ctx)))
	for i, name := range in.Dims {
		values[i] = "none"
		if i < len(dims) {
			values[i] = dim(dims[i])
		}
		attrs = append(attrs, attribute.String(name, values[i]))
	}
	opt := metric.WithAttributes(attrs...)
	hist, count := in.instruments()
	switch {
	case hist != nil:
		hist.Record(ctx, v, opt)
	case count != nil && v >= 0:
		count.Add(ctx, v, opt)
	}
	if s != nil {
		s.write(ctx, in, v, values)
	}
}
