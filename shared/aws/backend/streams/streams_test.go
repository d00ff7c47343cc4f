package streams_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/streams"
)

// The stream function reads the settings every runtime function reads,
// under the same names (it does not import backend, which would link the
// whole runtime).
func TestNamesAreTheBackends(t *testing.T) {
	for got, want := range map[string]string{
		streams.EnvTable: backend.EnvTable, streams.EnvBucket: backend.EnvBucket, streams.EnvOperators: backend.EnvOperators,
		streams.EnvRegion: backend.EnvRegion, streams.EnvEndpoint: backend.EnvEndpoint,
	} {
		if got != want {
			t.Errorf("streams reads %s, backend %s", got, want)
		}
	}
}

// FromEnv needs only the table and the bucket — no queue URLs: the stream
// function sends nothing — and names what is missing; a bad operator stops
// it at boot, as it stops the api function.
func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, err := streams.FromEnv(env(map[string]string{"CAIRN_TABLE": "t"})); err == nil || !strings.Contains(err.Error(), "CAIRN_BUCKET") {
		t.Errorf("no bucket: %v", err)
	}
	m := map[string]string{"CAIRN_TABLE": "t", "CAIRN_BUCKET": "b", "AWS_REGION": "us-east-1", "CAIRN_OPERATORS": "arn:aws:iam::111122223333:role/Ops,https://idp/|root"}
	c, err := streams.FromEnv(env(m))
	if err != nil || c.Table != "t" || c.Bucket != "b" || c.Region != "us-east-1" || len(c.Operators) != 2 {
		t.Fatalf("FromEnv = %+v, %v", c, err)
	}
	if _, err := streams.New(context.Background(), c); err != nil {
		t.Errorf("New: %v (it calls no AWS API)", err)
	}
	m["CAIRN_OPERATORS"] = "arn:aws:s3:::bucket"
	if _, err := streams.Boot(context.Background(), env(m), nil); err == nil || !strings.Contains(err.Error(), "CAIRN_OPERATORS") {
		t.Errorf("Boot with a bad operator: %v", err)
	}
}
