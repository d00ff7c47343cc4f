package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Namespace is the CloudWatch namespace of cairn's metrics.
const Namespace = "cairn"

// emfSink writes one embedded-metric-format document per record, a line
// each: CloudWatch Logs extracts the metric from a function's log stream.
type emfSink struct {
	mu sync.Mutex
	w  io.Writer
}

var sink atomic.Pointer[emfSink]

// EMF makes every record also write a CloudWatch embedded-metric-format
// line to w (a Lambda function's stdout); nil stops it. Each line is one
// JSON document, written whole under a lock, and published in two
// dimension sets: the instrument's dimensions with "function", and
// "function" alone (so a per-function graph needs no SEARCH). The line
// also carries the record's trace id ("traceId", not a dimension).
func EMF(w io.Writer) {
	if w == nil {
		sink.Store(nil)
		return
	}
	sink.Store(&emfSink{w: w})
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

func (s *emfSink) write(ctx context.Context, in *Instrument, v float64, values []string) {
	doc := make(map[string]any, len(values)+4)
	dims := append([]string{"function"}, in.Dims...)
	doc["_aws"] = emfMeta{Timestamp: time.Now().UnixMilli(), CloudWatchMetrics: []emfDirective{{
		Namespace: Namespace, Dimensions: [][]string{dims, {"function"}}, Metrics: []emfMetric{{Name: in.Name, Unit: in.Unit}},
	}}}
	doc["function"] = functionOf(ctx)
	for i, name := range in.Dims {
		doc[name] = values[i]
	}
	doc[in.Name] = v
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		doc["traceId"] = sc.TraceID().String()
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return // a NaN or ±Inf value: CloudWatch would reject it too
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(line)
}
