package crashpoint_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/assemble"
	awsbackend "github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/mcptools"
	"github.com/cairnrun/cairn/shared/aws/backend/sandboxes"
	"github.com/cairnrun/cairn/shared/aws/dynamo"
	"github.com/cairnrun/cairn/shared/aws/sqsqueue"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/crashpoint"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

// backends the crash matrix runs on, concurrently.
var backends = []backend{embedded(), awsBackend()}

// embedded is the SQLite backend of enginetest, one database per run.
func embedded() backend {
	return backend{name: "embedded", parallel: 6, stride: 1, start: func(*testing.T) opener {
		return func(t *testing.T, plan *crashpoint.Plan) *world {
			h := enginetest.New(t, func(p *assemble.Ports) { *p = crashpoint.Wrap(*p, plan) })
			return &world{rt: h.RT, clock: h.Clock, model: h.Model, queue: h.Store, sandbox: h.SandboxDir}
		}
	}}
}

// AWS matrix tuning; see awsBackend.
const (
	awsParallel = 3
	awsStride   = 8
)

// awsBackend is DynamoDB, S3 and SQS on the LocalStack-compatible endpoint
// (awstest): it skips without one, or fails with CI=true. The bucket is
// provisioned once and shared by every run (keys are unique per run); each
// run gets a fresh table, deleted when it ends, so no run's repair sees
// another's submissions and moto never scans a table grown by earlier runs;
// each runner holds its own queue set, reused run after run and emptied in
// between. Leases run on a manual clock; SQS visibility runs on
// real time, so a run lapses the dead process's in-flight messages with
// Plan.ReleaseInflight instead of waiting.
//
// Under `go test -race` on 2 CPUs the matrix crashes at every awsStride-th
// point (always the first and last) to stay within the package's time
// budget; crash at every point with
//
//	CAIRN_CRASH_FULL=1 go test -race -timeout 60m -run 'TestCrashAtEveryWritePoint/aws' ./shared/testkit/crashpoint/
//
// (see docs/RELIABILITY.md for its running time).
func awsBackend() backend {
	return backend{name: "aws", parallel: awsParallel, stride: awsStride, start: startAWS}
}

func startAWS(t *testing.T) opener {
	awsCfg := awstest.Config(t) // skips, or fails with CI=true, without an endpoint
	ctx := context.Background()
	base, err := awsbackend.Provision(ctx, awsCfg, awsbackend.Names{
		Table: awstest.Name(t, "crash"), Bucket: awstest.Name(t, "crash-blobs"), QueuePrefix: awstest.Name(t, "crash"),
	})
	if err != nil {
		t.Fatal(err)
	}
	pool := &queueSets{}
	return func(t *testing.T, plan *crashpoint.Plan) *world {
		t.Helper()
		set := pool.take(t, base)
		clock := enginetest.NewClock(enginetest.Start)
		cfg := base
		cfg.AWS, cfg.QueueURLs = &set.aws, set.urls
		cfg.Table = freshTable(t, set.aws)
		cfg.SandboxDir = t.TempDir()
		cfg.Env = []string{"PATH=" + os.Getenv("PATH")}
		cfg.Clock, cfg.LeaseTTL, cfg.Log = clock, turn.DefaultLeaseTTL, testLog(t)
		cfg.Serves.MCP = mcptools.Connector      // as the api and tools functions serve it
		cfg.Serves.Sandboxes = sandboxes.Fargate // the tools function's: local directories without Fargate settings
		built, err := awsbackend.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Reassemble from the backend's ports: wrapped by the plan, with a
		// model the run can count.
		raw := built.Ports
		model := scripted.New()
		ports := raw
		ports.Models = map[string]contracts.ModelClient{"scripted": model}
		rt, err := assemble.New(crashpoint.Wrap(ports, plan), built.Config)
		if err != nil {
			t.Fatal(err)
		}
		lapse := func() {
			if _, err := plan.ReleaseInflight(ctx); err != nil {
				t.Logf("releasing in-flight messages: %v", err)
			}
		}
		t.Cleanup(func() {
			lapse()
			set.purge(t, raw.Queue)
			pool.put(set)
		})
		return &world{rt: rt, clock: clock, model: model, queue: raw.Queue, sandbox: cfg.SandboxDir, lapse: lapse}
	}
}

// freshTable creates a table for one run and deletes it when t ends.
func freshTable(t *testing.T, cfg aws.Config) string {
	t.Helper()
	ctx := context.Background()
	name := awstest.Name(t, "crash")
	client := dynamodb.NewFromConfig(cfg)
	if err := dynamo.CreateTable(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name}); err != nil {
			t.Logf("deleting table %s: %v", name, err)
		}
	})
	return name
}

// queueSet is one runner's queues and its serial SDK client.
type queueSet struct {
	aws  aws.Config
	urls map[string]string
}

// queueSets hands out idle queue sets, creating one when none is idle, so
// there are as many as runs ever overlapped.
type queueSets struct {
	mu   sync.Mutex
	idle []*queueSet
}

func (p *queueSets) take(t *testing.T, base awsbackend.Config) *queueSet {
	t.Helper()
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		s := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	cfg := *base.AWS
	urls, err := sqsqueue.CreateQueues(context.Background(), sqs.NewFromConfig(cfg), awstest.Name(t, "crash"), 5, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return &queueSet{aws: cfg, urls: urls}
}

func (p *queueSets) put(s *queueSet) {
	p.mu.Lock()
	p.idle = append(p.idle, s)
	p.mu.Unlock()
}

// purge deletes every visible message of the set, so the next run starts on
// empty queues.
func (s *queueSet) purge(t *testing.T, q contracts.Queue) {
	ctx := context.Background()
	for name := range s.urls {
		for range 100 {
			ds, err := q.Receive(ctx, name, 10, time.Minute)
			if err != nil {
				t.Logf("purging %s: %v", name, err)
				break
			}
			if len(ds) == 0 {
				break
			}
			for _, d := range ds {
				if err := q.Delete(ctx, name, d.Receipt); err != nil {
					t.Logf("purging %s: %v", name, err)
				}
			}
		}
	}
}

// testLog reports warnings and errors through the test log.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
