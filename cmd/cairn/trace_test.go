package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"syscall"
	"testing"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// otlpReceiver is an OTLP/HTTP trace and metric endpoint on loopback: it
// decodes every export (protobuf, as the SDK's exporters send it) and
// keeps the spans by name with their trace id and attributes, and the
// names of the metrics with data points.
type otlpReceiver struct {
	mu       sync.Mutex
	services []string
	spans    []gotSpan
	metrics  map[string]int // data points by metric name
}

type gotSpan struct {
	name    string
	traceID string
	attrs   map[string]string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/metrics" {
		o.serveMetrics(w, body)
		return
	}
	var req collector.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				o.services = append(o.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g := gotSpan{name: s.Name, traceID: string(s.TraceId), attrs: map[string]string{}}
				for _, kv := range s.Attributes {
					g.attrs[kv.Key] = kv.GetValue().GetStringValue()
				}
				o.spans = append(o.spans, g)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

func (o *otlpReceiver) serveMetrics(w http.ResponseWriter, body []byte) {
	var req collectormetrics.ExportMetricsServiceRequest
	if proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP metric export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.metrics == nil {
		o.metrics = map[string]int{}
	}
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				o.metrics[m.Name] += len(m.GetHistogram().GetDataPoints()) + len(m.GetSum().GetDataPoints())
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
	_, _ = w.Write(b)
}

// tracedDemo runs the scripted demo turn on a `cairn dev --otlp endpoint`
// and stops it gracefully, which flushes what its span batcher holds; it
// returns the turn's session and submission.
func tracedDemo(t *testing.T, endpoint string) (contracts.Session, contracts.Submission) {
	t.Helper()
	return demoOn(t, startDev(t, t.TempDir(), "--otlp", endpoint))
}

// tracedDemoAWS is tracedDemo on `cairn dev --backend aws` (the endpoint's
// queues, table and bucket; the harness playing the functions).
func tracedDemoAWS(t *testing.T, endpoint string) (contracts.Session, contracts.Submission) {
	t.Helper()
	ep, data := awstest.Endpoint(t), t.TempDir()
	d, _ := launch(t, data, nil, "cairn dev (aws backend) listening on ", "trace-aws", "dev", "--backend", "aws", "--endpoint", ep,
		"--addr", "127.0.0.1:0", "--data", data, "--table", awstest.Name(t, "trace"), "--bucket", awstest.Name(t, "trace-blobs"),
		"--queue-prefix", awstest.Name(t, "trace"), "--token", "trace-aws", "--otlp", endpoint)
	return demoOn(t, d)
}

func demoOn(t *testing.T, d *devServer) (contracts.Session, contracts.Submission) {
	t.Helper()
	ctx := context.Background()
	s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:demo"})
	if err != nil {
		t.Fatal(err)
	}
	su, err := d.cl.Submit(ctx, s.ID, "do the demo", client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitDone(t, ctx, d.cl, s.ID, su.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()
	return s.Session, su
}

// TestDevExportsATurnAsOneTrace: `cairn dev --otlp URL` exports a turn's
// spans over OTLP/HTTP (flushed when it stops), all in one trace, and the
// metrics the turn recorded.
func TestDevExportsATurnAsOneTrace(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	s, su := tracedDemo(t, srv.URL)
	checkExport(t, recv, "cairn-dev", s, su)
}

// TestDevAWSExportsATurnAsOneTrace: the same on the serverless shape —
// the turn crosses SQS queues on the endpoint between the functions the
// harness plays, and is still one trace.
func TestDevAWSExportsATurnAsOneTrace(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	s, su := tracedDemoAWS(t, srv.URL)
	checkExport(t, recv, "cairn-dev-aws", s, su)
}

func checkExport(t *testing.T, recv *otlpReceiver, service string, s contracts.Session, su contracts.Submission) {
	t.Helper()
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if !slices.Contains(recv.services, service) {
		t.Errorf("service names %v, want %s", recv.services, service)
	}
	traces := map[string]bool{}
	var names []string
	for _, sp := range recv.spans {
		if sp.attrs["cairn.submission_id"] == su.ID || (sp.name == "cairn.accept" && sp.attrs["cairn.session_id"] == s.ID) {
			traces[sp.traceID] = true
			names = append(names, sp.name)
		}
	}
	if len(traces) != 1 {
		t.Fatalf("the turn's spans are in %d traces, want 1: %v", len(traces), names)
	}
	// on both shapes the final answer commits in the model phase: no commit span
	for _, want := range []string{"cairn.accept", "cairn.phase model", "cairn.phase tools"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s span exported: %v", want, names)
		}
	}
	tools := 0
	for _, sp := range recv.spans {
		if traces[sp.traceID] && sp.attrs["cairn.tool.name"] != "" {
			tools++
		}
	}
	if tools != 4 {
		t.Errorf("%d tool spans in the turn's trace, want the demo's 4", tools)
	}
	for _, want := range []string{"cairn.phase.duration", "cairn.queue.age", "cairn.model.latency", "cairn.model.tokens", "cairn.tool.duration", "cairn.turns"} {
		if recv.metrics[want] == 0 {
			t.Errorf("no data points of %s exported: %v", want, recv.metrics)
		}
	}
}
