package backend_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/dynamo"
	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/aws/s3blob"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awscost"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// BenchmarkCostPerAgentStep runs whole turns on the endpoint (api → model →
// tools → model → commit, the scripted "bench" scenario: 2 agent steps per
// turn) with every AWS call counted by an SDK middleware, and prints the
// orchestration cost per million agent steps next to Step Functions
// Standard for the same shape.
func BenchmarkCostPerAgentStep(b *testing.B) {
	awsCfg := awstest.Config(b)
	ctx := context.Background()
	cfg, err := backend.Provision(ctx, awsCfg, backend.Names{
		Table: awstest.Name(b, "cost"), Bucket: awstest.Name(b, "cost-blobs"), QueuePrefix: awstest.Name(b, "cost"),
	})
	if err != nil {
		b.Fatal(err)
	}
	var counter awscost.CallCounter
	counted := awsCfg
	counter.Instrument(&counted)
	cfg.AWS = &counted
	cfg.SandboxDir = b.TempDir()
	cfg.Env = []string{"PATH=" + os.Getenv("PATH")}
	rt, err := backend.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	h := &harness.Harness{Client: sqs.NewFromConfig(counted)}
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit} {
		h.Functions = append(h.Functions, harness.Function{Queue: q, URL: cfg.QueueURLs[q], BatchSize: 10,
			Visibility: 30 * time.Second, Timeout: time.Minute, Handler: lambdafn.SQSHandler(q, rt.Engine.Handle, nil)})
	}
	spec := contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}}
	sessions := make([]string, b.N)
	for i := range sessions {
		s, err := rt.Engine.CreateSession(ctx, "bench", spec)
		if err != nil {
			b.Fatal(err)
		}
		sessions[i] = s.ID
	}
	// the benchmark waits by reading the journal through an uncounted
	// client: those reads are not cairn's
	plain, err := dynamo.New(dynamodb.NewFromConfig(awsCfg), dynamo.Options{Table: cfg.Table, Blobs: s3blob.New(s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = true }), cfg.Bucket)})
	if err != nil {
		b.Fatal(err)
	}
	counter.Reset()
	before := h.Invocations()
	b.ResetTimer()
	for _, sid := range sessions {
		sub, _, err := rt.Engine.Accept(ctx, sid, "go", "")
		if err != nil {
			b.Fatal(err)
		}
		for {
			got, err := plain.GetSubmission(ctx, sub.ID)
			if err != nil {
				b.Fatal(err)
			}
			if got.Phase.Terminal() {
				if got.Phase != contracts.PhaseCommitted {
					b.Fatalf("%s: %s", got.Phase, got.Error)
				}
				break
			}
			for _, fn := range h.Functions {
				if _, err := h.Once(ctx, fn); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	calls := counter.Snapshot()
	invocations := h.Invocations() - before
	// Lambda's event source mapping long-polls idle queues whatever the
	// load; per step count only the receives that delivered a batch.
	calls["SQS.ReceiveMessage"] = invocations
	steps := int64(2 * b.N)
	// + one api invocation per turn (the submission)
	total, sfn := awscost.CostReport(os.Stdout, calls, invocations+int64(b.N), steps, 2)
	b.ReportMetric(total, "$/M-steps")
	b.ReportMetric(sfn, "sfn-$/M-steps")
}
