package lambdafn_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

// gated writes "one", waits for release, then writes "two": a response
// that is streamed reaches its reader before the handler ends.
func gated(release func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		name, err := lambdafn.Caller(r.Context())
		w.Header().Set("X-Caller", name)
		if err != nil || contracts.BufferedResponse(r.Context()) {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "data: one\n\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			_, _ = io.WriteString(w, "data: flush "+err.Error()+"\n\n")
		}
		release()
		_, _ = io.WriteString(w, "data: two\n\n")
	})
}

// TestStreamHandlerStreamsAsWritten: the function URL handler passes the
// IAM caller (normalised as API Gateway's), does not mark the response
// buffered, flushes without error, and its body yields each write while
// the handler is still running.
func TestStreamHandlerStreamsAsWritten(t *testing.T) {
	released := make(chan struct{})
	h := lambdafn.StreamHandler("stream", gated(func() { <-released }))
	ev := harness.URLEvent("GET", "/v1/sessions/s/events", http.Header{"Accept": {"text/event-stream"}}, nil,
		"arn:aws:iam::111122223333:assumed-role/Dev/alice")
	resp, err := h(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Headers["X-Caller"] != "arn:aws:sts::111122223333:assumed-role/Dev/alice" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Headers)
	}
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(released) // only now may the handler go on: "one" arrived while it was blocked
	rest, _ := io.ReadAll(rd)
	if string(rest) != "\ndata: two\n\n" {
		t.Fatalf("rest %q (a flush error is written into the stream)", rest)
	}
}

// TestURLCallerNameIsCallerName: a function URL's IAM caller has the name
// API Gateway's IAM authorizer gives the same caller; no IAM context is a
// 401, never a principal.
func TestURLCallerNameIsCallerName(t *testing.T) {
	for _, arn := range []string{
		"arn:aws:sts::111122223333:assumed-role/Dev/alice",
		"arn:aws:iam::111122223333:assumed-role/Dev/alice",
		"arn:aws:iam::111122223333:user/ops/bob",
		"arn:aws:iam::111122223333:root",
		"arn:aws-cn:sts::111122223333:assumed-role/Dev/alice",
		"arn:aws:sts::111122223333:assumed-role/Dev",
		"arn:aws:s3:::bucket",
		"nonsense",
	} {
		want, wantErr := lambdafn.CallerName(harness.APIEvent("GET", "/", nil, nil, harness.IAM(arn)).RequestContext)
		got, err := lambdafn.URLCallerName(harness.URLEvent("GET", "/", nil, nil, arn).RequestContext)
		if got != want || (err == nil) != (wantErr == nil) || err != nil && !errors.Is(err, contracts.ErrPermission) {
			t.Errorf("%s: %q, %v; API Gateway: %q, %v", arn, got, err, want, wantErr)
		}
	}
	if _, err := lambdafn.URLCallerName(harness.URLEvent("GET", "/", nil, nil, "").RequestContext); !errors.Is(err, contracts.ErrPermission) {
		t.Errorf("no authorizer: %v", err)
	}
	h := lambdafn.StreamHandler("stream", gated(func() {}))
	resp, err := h(context.Background(), harness.URLEvent("GET", "/", nil, nil, ""))
	if err != nil || resp.StatusCode != http.StatusInternalServerError || resp.Headers["X-Caller"] != "" {
		t.Fatalf("no authorizer: %v %+v", err, resp)
	}
}

// runtimeChildEnv marks the process TestStreamHandlerThroughTheRuntimeAPI starts.
const runtimeChildEnv = "CAIRN_TEST_STREAM_RUNTIME_CHILD"

// TestStreamHandlerThroughTheRuntimeAPI runs StreamHandler under
// aws-lambda-go's runtime client (lambda.Start, in a child process)
// against a fake Runtime API: the response's first write reaches the
// Runtime API — as a chunk of the streamed /response POST — while the
// handler is still blocked, so nothing between the handler and Lambda
// buffers it.
func TestStreamHandlerThroughTheRuntimeAPI(t *testing.T) {
	if os.Getenv(runtimeChildEnv) == "1" {
		api := os.Getenv("AWS_LAMBDA_RUNTIME_API")
		lambda.StartHandlerFunc(lambdafn.StreamHandler("stream", gated(func() {
			if resp, err := http.Get("http://" + api + "/release"); err == nil {
				resp.Body.Close()
			}
		})))
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	sawOne, streamed := make(chan struct{}), make(chan bool, 1)
	type result struct {
		contentType string
		body        []byte
	}
	done := make(chan result, 1)
	var served atomic.Bool
	var seen sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		if served.Swap(true) {
			<-r.Context().Done() // one invocation only
			return
		}
		b, _ := json.Marshal(harness.URLEvent("GET", "/v1/sessions/s/events", http.Header{"Accept": {"text/event-stream"}}, nil, "arn:aws:iam::111122223333:user/bob"))
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-1")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:111122223333:function:stream")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /release", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-sawOne:
			streamed <- true
		case <-time.After(10 * time.Second):
			streamed <- false
		}
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/req-1/response", func(w http.ResponseWriter, r *http.Request) {
		var got bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			got.Write(buf[:n])
			if bytes.Contains(got.Bytes(), []byte("data: one\n\n")) {
				seen.Do(func() { close(sawOne) })
			}
			if err != nil {
				break
			}
		}
		done <- result{r.Header.Get("Content-Type"), got.Bytes()}
		w.WriteHeader(http.StatusAccepted)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	child := exec.Command(os.Args[0], "-test.run=^TestStreamHandlerThroughTheRuntimeAPI$")
	child.Env = append(os.Environ(), runtimeChildEnv+"=1", "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(srv.URL, "http://"))
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("no response from the child runtime within 30 s")
	}
	if !<-streamed {
		t.Errorf("the first write did not reach the Runtime API while the handler ran (buffered)")
	}
	prelude, body, ok := bytes.Cut(res.body, make([]byte, 8))
	var head struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if !ok || json.Unmarshal(prelude, &head) != nil || head.StatusCode != 200 || head.Headers["X-Caller"] != "arn:aws:iam::111122223333:user/bob" {
		t.Errorf("prelude %q", prelude)
	}
	if res.contentType != "application/vnd.awslambda.http-integration-response" || string(body) != "data: one\n\ndata: two\n\n" {
		t.Errorf("content type %q body %q", res.contentType, body)
	}
}
