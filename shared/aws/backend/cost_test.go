package backend_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/sandboxes"
	"github.com/cairnrun/cairn/shared/aws/dynamo"
	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/aws/s3blob"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awscost"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// A costVariant is one shape of the benchmark's turn: the scripted sized
// scenario (step 0: a few words and one bash call printing ToolBytes;
// step 1: an answer of AnswerBytes) streamed in ChunkBytes chunks, one
// every Pace — slower than the engine's 50 ms flush, as a provider
// streaming ~20 tokens a chunk is, so a flush holds about one chunk.
type costVariant struct {
	Name                               string
	AnswerBytes, ChunkBytes, ToolBytes int
	Pace                               time.Duration
	// MaxTurns caps the turns measured (every turn of a variant writes the
	// same items; a 64 KB answer at real pacing takes ~50 s a turn).
	MaxTurns int
}

func (v costVariant) model() string {
	return fmt.Sprintf("scripted:bench-%d-%d-%d@%s", v.AnswerBytes, v.ChunkBytes, v.ToolBytes, v.Pace)
}

var costVariants = []costVariant{
	{Name: "answer=200B", AnswerBytes: 200, ChunkBytes: 80, ToolBytes: 2048, Pace: 60 * time.Millisecond, MaxTurns: 20},
	{Name: "answer=4KB", AnswerBytes: 4096, ChunkBytes: 80, ToolBytes: 2048, Pace: 60 * time.Millisecond, MaxTurns: 5},
	{Name: "answer=64KB", AnswerBytes: 64 << 10, ChunkBytes: 80, ToolBytes: 2048, Pace: 60 * time.Millisecond, MaxTurns: 1},
}

// BenchmarkCostPerAgentStep runs whole turns on the endpoint (api → model →
// tools → model → commit: 2 agent steps per turn) for each variant, with
// every AWS call counted and every DynamoDB call priced in request units
// from its items (awscost.Meter: item size, every index copy), and prints
// the orchestration cost per million agent steps next to Step Functions
// Standard for the same shape.
func BenchmarkCostPerAgentStep(b *testing.B) {
	for _, v := range costVariants {
		b.Run(v.Name, func(b *testing.B) {
			turns := min(b.N, v.MaxTurns)
			r := runCostTurns(b, v, turns)
			fmt.Printf("--- %s: %d turns (%d agent steps), model %s\n", v.Name, turns, r.Steps, v.model())
			c := r.Print(os.Stdout)
			b.ReportMetric(c.DollarsPerM, "$/M-steps")
			b.ReportMetric(c.WUPerStep, "WU/step")
			b.ReportMetric(c.RUPerStep, "RU/step")
			b.ReportMetric(c.DynamoCalls, "ddb-calls/step")
			b.ReportMetric(c.SFNPerM, "sfn-$/M-steps")
		})
	}
}

// runCostTurns runs turns turns of v against the endpoint and returns what
// they cost.
func runCostTurns(tb testing.TB, v costVariant, turns int) awscost.Report {
	awsCfg := awstest.Config(tb)
	ctx := context.Background()
	cfg, err := backend.Provision(ctx, awsCfg, backend.Names{
		Table: awstest.Name(tb, "cost"), Bucket: awstest.Name(tb, "cost-blobs"), QueuePrefix: awstest.Name(tb, "cost"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	// the meter's shadow reads and the benchmark's waiting go through
	// uncounted clients: those calls are not cairn's
	counter := awscost.CallCounter{Meter: &awscost.Meter{DB: dynamodb.NewFromConfig(awsCfg)}}
	counted := awsCfg
	counter.Instrument(&counted)
	cfg.AWS = &counted
	cfg.SandboxDir = tb.TempDir()
	cfg.Env = []string{"PATH=" + os.Getenv("PATH")}
	cfg.Serves.Sandboxes = sandboxes.Fargate // local directories here: no Fargate settings
	rt, err := backend.New(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	h := &harness.Harness{Client: sqs.NewFromConfig(counted)}
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit} {
		h.Functions = append(h.Functions, harness.Function{Queue: q, URL: cfg.QueueURLs[q], BatchSize: 10,
			Visibility: 30 * time.Second, Timeout: 5 * time.Minute, Handler: lambdafn.SQSHandler(q, rt.Engine.Handle, nil)})
	}
	spec := contracts.SessionSpec{Model: v.model(), Tools: []contracts.ToolConfig{{Name: "bash"}}}
	sessions := make([]string, turns)
	for i := range sessions {
		s, err := rt.Engine.CreateSession(ctx, "bench", spec)
		if err != nil {
			tb.Fatal(err)
		}
		sessions[i] = s.ID
	}
	plain, err := dynamo.New(dynamodb.NewFromConfig(awsCfg), dynamo.Options{Table: cfg.Table, Blobs: s3blob.New(s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = true }), cfg.Bucket)})
	if err != nil {
		tb.Fatal(err)
	}
	if b, ok := tb.(*testing.B); ok {
		b.ResetTimer()
	}
	counter.Reset()
	before := h.Invocations()
	for _, sid := range sessions {
		// a prompt of its own: the sized answer and tool output begin with
		// it, so no turn's bytes repeat another's (the shared-string store
		// keeps one copy of equal content)
		sub, _, err := rt.Engine.Accept(ctx, sid, "go "+sid, "")
		if err != nil {
			tb.Fatal(err)
		}
		for {
			got, err := plain.GetSubmission(ctx, sub.ID)
			if err != nil {
				tb.Fatal(err)
			}
			if got.Phase.Terminal() {
				if got.Phase != contracts.PhaseCommitted {
					tb.Fatalf("%s: %s", got.Phase, got.Error)
				}
				if len(got.Result) < v.AnswerBytes-8 {
					tb.Fatalf("answer of %d bytes, want %d", len(got.Result), v.AnswerBytes)
				}
				break
			}
			for _, fn := range h.Functions {
				if _, err := h.Once(ctx, fn); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	if b, ok := tb.(*testing.B); ok {
		b.StopTimer()
	}
	if err := counter.Meter.Err(); err != nil {
		tb.Fatalf("metering: %v", err)
	}
	calls := counter.Snapshot()
	invocations := h.Invocations() - before
	// Lambda's event source mapping long-polls idle queues whatever the
	// load; per step count only the receives that delivered a batch.
	calls["SQS.ReceiveMessage"] = invocations
	return awscost.Report{
		Calls: calls, Units: counter.Meter.ByOp(), Kinds: counter.Meter.ByKind(),
		Invocations:   invocations + int64(turns), // + one api invocation per turn (the submission)
		Steps:         int64(2 * turns),
		PhasesPerStep: 2,
	}
}
