//go:build tracecheck

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// TestJaegerSeesATurn (make trace-check; JAEGER_BIN from scripts/jaeger.sh):
// a real Jaeger v2 on loopback receives `cairn dev --otlp`'s export of a
// turn — on the embedded backend, and on the serverless shape (`cairn dev
// --backend aws` against the endpoint: SQS hops between the functions) —
// and its query API shows one trace whose phases chain across the queue
// hops: each phase span a child of the accept span or of a phase.
func TestJaegerSeesATurn(t *testing.T) {
	bin := os.Getenv("JAEGER_BIN")
	if bin == "" {
		t.Fatal("JAEGER_BIN is not set: run make trace-check")
	}
	dir := t.TempDir()
	otlp, query, grpc := freeAddr(t), freeAddr(t), freeAddr(t)
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}
  telemetry: {metrics: {level: none}}
extensions:
  jaeger_query: {storage: {traces: mem}, http: {endpoint: %q}, grpc: {endpoint: %q}}
  jaeger_storage: {backends: {mem: {memory: {max_traces: 1000}}}}
receivers:
  otlp: {protocols: {http: {endpoint: %q}}}
processors:
  batch: {}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
`, query, grpc, otlp)
	if err := os.WriteFile(filepath.Join(dir, "jaeger.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	j := exec.Command(bin, "--config=file:"+filepath.Join(dir, "jaeger.yaml"))
	logf, _ := os.Create(filepath.Join(dir, "jaeger.log"))
	j.Stdout, j.Stderr = logf, logf
	if err := j.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Process.Kill(); _ = j.Wait() })
	poll(t, "jaeger's query API", func() bool {
		resp, err := http.Get("http://" + query + "/api/services")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	for _, c := range []struct {
		name, service string
		demo          func(*testing.T, string) (contracts.Session, contracts.Submission)
	}{{"embedded", "cairn-dev", tracedDemo}, {"aws", "cairn-dev-aws", tracedDemoAWS}} {
		t.Run(c.name, func(t *testing.T) {
			_, su := c.demo(t, "http://"+otlp)
			jaegerHasTheTurn(t, query, c.service, su.ID)
		})
	}
}

// jaegerHasTheTurn checks Jaeger's query API for submission subID's trace.
func jaegerHasTheTurn(t *testing.T, query, service, subID string) {

	type span struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	}
	var traces []struct {
		TraceID string `json:"traceID"`
		Spans   []span `json:"spans"`
	}
	poll(t, "the turn's trace in jaeger", func() bool {
		resp, err := http.Get("http://" + query + "/api/traces?service=" + service + "&limit=20")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			Data json.RawMessage `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil || json.Unmarshal(body.Data, &traces) != nil {
			return false
		}
		for _, tr := range traces {
			if len(tr.Spans) >= 17 { // the whole turn arrived
				return true
			}
		}
		return false
	})
	var mine []string
	for _, tr := range traces {
		byID := map[string]span{}
		has := false
		for _, sp := range tr.Spans {
			byID[sp.SpanID] = sp
			for _, tag := range sp.Tags {
				if tag.Key == "cairn.submission_id" && tag.Value == subID {
					has = true
				}
			}
		}
		if !has {
			continue
		}
		mine = append(mine, tr.TraceID)
		var phases []string
		for _, sp := range tr.Spans {
			if !strings.HasPrefix(sp.OperationName, "cairn.phase ") {
				continue
			}
			phases = append(phases, sp.OperationName)
			if len(sp.References) != 1 || sp.References[0].RefType != "CHILD_OF" {
				t.Errorf("%s: references %+v", sp.OperationName, sp.References)
				continue
			}
			parent := byID[sp.References[0].SpanID].OperationName
			if parent != "cairn.accept" && !strings.HasPrefix(parent, "cairn.phase ") {
				t.Errorf("%s is a child of %q", sp.OperationName, parent)
			}
		}
		slices.Sort(phases)
		if want := []string{"cairn.phase commit", "cairn.phase model", "cairn.phase model", "cairn.phase model", "cairn.phase model",
			"cairn.phase tools", "cairn.phase tools", "cairn.phase tools"}; !slices.Equal(phases, want) {
			t.Errorf("phases %v, want %v", phases, want)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("the turn is in %d traces, want 1", len(mine))
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// poll waits for cond, checking on each tick; the bound only ends a
// failing run.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	end := time.After(2 * time.Minute)
	for !cond() {
		select {
		case <-tick.C:
		case <-end:
			t.Fatalf("%s: not there after 2 minutes", what)
		}
	}
}
