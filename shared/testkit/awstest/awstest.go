package awstest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/cairnrun/cairn/shared/ids"
)

// DefaultEndpoint is LocalStack's edge port, where CI runs moto_server.
const DefaultEndpoint = "http://127.0.0.1:4566"

var (
	probeOnce sync.Once
	probeErr  error
)

// Endpoint returns the endpoint URL, skipping (or, with CI=true, failing)
// the test when nothing answers there.
func Endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv("CAIRN_AWS_ENDPOINT")
	if ep == "" {
		ep = DefaultEndpoint
	}
	probeOnce.Do(func() { probeErr = probe(ep) })
	if probeErr != nil {
		msg := "AWS endpoint " + ep + " not reachable (" + probeErr.Error() + "); start one with scripts/moto.sh start or scripts/localstack.sh start"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return ep
}

func probe(ep string) error {
	c := &http.Client{Timeout: 3 * time.Second}
	var last error
	for range 10 {
		resp, err := c.Get(strings.TrimRight(ep, "/") + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		last = err
		time.Sleep(300 * time.Millisecond) // the endpoint may still be starting
	}
	return last
}

// Config returns an SDK config for the endpoint with static test
// credentials in us-east-1. Its HTTP client sends one request at a time
// (SerialHTTP): moto does not make a conditional write atomic under
// concurrent requests, and DynamoDB's atomicity is what the tests rely on,
// not what they test. The code under test still runs concurrently.
func Config(t testing.TB) aws.Config {
	t.Helper()
	ep := Endpoint(t)
	return aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(ep),
		RetryMaxAttempts: 3,
		HTTPClient:       SerialHTTP(),
	}
}

// SerialHTTP returns an HTTP client that sends one request at a time and
// reads each response whole before the next request starts.
func SerialHTTP() *http.Client {
	return &http.Client{Transport: &serialTransport{next: http.DefaultTransport}}
}

type serialTransport struct {
	mu   sync.Mutex
	next http.RoundTripper
}

func (t *serialTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// Name returns prefix-<8 random hex>, unique per call: tests create their
// own tables, buckets and queues under such names.
func Name(t testing.TB, prefix string) string {
	return prefix + "-" + ids.RandomHex(4)
}

// Context returns a context cancelled when the test ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}
