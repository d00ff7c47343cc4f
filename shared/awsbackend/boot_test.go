package awsbackend_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/awsbackend"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func fullEnv() map[string]string {
	m := map[string]string{"CAIRN_TABLE": "t", "CAIRN_BUCKET": "b", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "PATH": "/usr/bin"}
	for _, q := range awsbackend.Queues {
		m[awsbackend.QueueEnv(q)] = "http://127.0.0.1:4566/000000000000/cairn-" + q + ".fifo"
	}
	return m
}

func TestFromEnvNamesWhatIsMissing(t *testing.T) {
	_, err := awsbackend.FromEnv(env(map[string]string{"CAIRN_TABLE": "t"}))
	if err == nil {
		t.Fatal("no error with most variables missing")
	}
	for _, want := range []string{"CAIRN_BUCKET", "CAIRN_QUEUE_URL_MODEL", "CAIRN_QUEUE_URL_COMMIT_DLQ"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	m := fullEnv()
	m["CAIRN_LEASE_TTL_SECONDS"] = "soon"
	if _, err := awsbackend.FromEnv(env(m)); err == nil || !strings.Contains(err.Error(), "CAIRN_LEASE_TTL_SECONDS") {
		t.Errorf("bad lease TTL: %v", err)
	}
	c, err := awsbackend.FromEnv(env(fullEnv()))
	if err != nil || c.Endpoint != "http://127.0.0.1:4566" || len(c.QueueURLs) != len(awsbackend.Queues) {
		t.Fatalf("FromEnv = %+v, %v", c, err)
	}
}

// BenchmarkBoot is a function's init work after the process starts:
// reading the environment, loading the SDK config, building the clients
// and adapters and assembling the runtime (no AWS call is made).
func BenchmarkBoot(b *testing.B) {
	getenv := env(fullEnv())
	for b.Loop() {
		if _, err := awsbackend.Boot(context.Background(), getenv, nil); err != nil {
			b.Fatal(err)
		}
	}
}
