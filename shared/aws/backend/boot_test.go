package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/all"
	"github.com/cairnrun/cairn/shared/aws/backend/sandboxes"
	"github.com/cairnrun/cairn/shared/contracts"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func fullEnv() map[string]string {
	m := map[string]string{"CAIRN_TABLE": "t", "CAIRN_BUCKET": "b", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "PATH": "/usr/bin"}
	for _, q := range backend.Queues {
		m[backend.QueueEnv(q)] = "http://127.0.0.1:4566/000000000000/cairn-" + q + ".fifo"
	}
	return m
}

func TestFromEnvNamesWhatIsMissing(t *testing.T) {
	_, err := backend.FromEnv(env(map[string]string{"CAIRN_TABLE": "t"}))
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
	if _, err := backend.FromEnv(env(m)); err == nil || !strings.Contains(err.Error(), "CAIRN_LEASE_TTL_SECONDS") {
		t.Errorf("bad lease TTL: %v", err)
	}
	c, err := backend.FromEnv(env(fullEnv()))
	if err != nil || c.Endpoint != "http://127.0.0.1:4566" || len(c.QueueURLs) != len(backend.Queues) {
		t.Fatalf("FromEnv = %+v, %v", c, err)
	}
}

// CAIRN_OPERATORS is read as a list; an entry that names no principal
// the authorizer can produce stops the function at boot.
func TestOperatorsFromEnv(t *testing.T) {
	m := fullEnv()
	m["CAIRN_OPERATORS"] = "arn:aws:iam::111122223333:role/Ops,https://idp/|root"
	c, err := backend.FromEnv(env(m))
	if err != nil || len(c.Operators) != 2 || c.Operators[1] != "https://idp/|root" {
		t.Fatalf("FromEnv: %q, %v", c.Operators, err)
	}
	m["CAIRN_OPERATORS"] = "arn:aws:s3:::bucket"
	if _, err := backend.Boot(context.Background(), env(m), nil, backend.Serves{}); err == nil || !strings.Contains(err.Error(), "CAIRN_OPERATORS") {
		t.Fatalf("Boot with a bad operator: %v", err)
	}
}

// BenchmarkBoot is a function's init work after the process starts:
// reading the environment, loading the SDK config, building the clients
// and adapters and assembling the runtime (no AWS call is made): the
// commit function's (Serves{}) and one serving everything.
func BenchmarkBoot(b *testing.B) {
	getenv := env(fullEnv())
	for _, v := range []struct {
		name   string
		serves backend.Serves
	}{{"checks", backend.Serves{}}, {"all", all.Serves}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := backend.Boot(context.Background(), getenv, nil, v.serves); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestFargateSandboxesFromEnv(t *testing.T) {
	m := fullEnv()
	m["CAIRN_SANDBOX_CLUSTER"] = "cairn"
	_, err := backend.FromEnv(env(m))
	for _, want := range []string{"CAIRN_SANDBOX_TASK_DEFINITION", "CAIRN_SANDBOX_SUBNETS", "CAIRN_SANDBOX_SECURITY_GROUPS", "CAIRN_SANDBOX_KEY_SECRET"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	m["CAIRN_SANDBOX_TASK_DEFINITION"] = "cairn-sandboxd"
	m["CAIRN_SANDBOX_SUBNETS"] = "subnet-a, subnet-b"
	m["CAIRN_SANDBOX_SECURITY_GROUPS"] = "sg-1"
	m["CAIRN_SANDBOX_KEY_SECRET"] = "env:TEST_SANDBOX_KEY"
	m["CAIRN_SANDBOX_IDLE_SECONDS"] = "600"
	c, err := backend.FromEnv(env(m))
	if err != nil {
		t.Fatal(err)
	}
	if f := c.Fargate; f == nil || len(f.Subnets) != 2 || f.Subnets[1] != "subnet-b" || f.Container != "sandboxd" || f.IdleTimeout != 10*time.Minute {
		t.Fatalf("fargate settings %+v", c.Fargate)
	}
	// The tools function places sandboxes: the key reference must resolve,
	// and without it Boot says which one. The other functions only check
	// specs and never read the key.
	tools := backend.Serves{Sandboxes: sandboxes.Fargate}
	if _, err := backend.Boot(context.Background(), env(m), nil, tools); err == nil || !strings.Contains(err.Error(), "env:TEST_SANDBOX_KEY") {
		t.Fatalf("boot without the key: %v", err)
	}
	checks, err := backend.Boot(context.Background(), env(m), nil, backend.Serves{})
	if err != nil {
		t.Fatalf("a function placing no sandbox needs no sandbox key: %v", err)
	}
	if _, err := checks.Ports.Sandboxes.Acquire(context.Background(), "s", contracts.SandboxSpec{}); !errors.Is(err, contracts.ErrUnavailable) {
		t.Errorf("Acquire outside the tools function: %v, want ErrUnavailable", err)
	}
	m["TEST_SANDBOX_KEY"] = "0123456789abcdef0123456789abcdef"
	placing, err := backend.Boot(context.Background(), env(m), nil, tools)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range []*assemble.Runtime{placing, checks} {
		// Tools never run in the function itself: only fargate is served.
		if err := rt.Engine.CheckSandbox(contracts.SandboxSpec{}); err != nil {
			t.Errorf("default kind refused: %v", err)
		}
		if err := rt.Engine.CheckSandbox(contracts.SandboxSpec{Kind: "local"}); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("local kind with Fargate configured: %v", err)
		}
	}
}
