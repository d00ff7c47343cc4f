package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/aws/awsconfig"
	"github.com/cairnrun/cairn/shared/aws/awsmeter"
	"github.com/cairnrun/cairn/shared/aws/dynamo"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/aws/s3blob"
	"github.com/cairnrun/cairn/shared/aws/sqsqueue"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/dumpable"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/meter"
	"github.com/cairnrun/cairn/shared/model/providers/keys"
	"github.com/cairnrun/cairn/shared/pricing"
	"github.com/cairnrun/cairn/shared/secrets"
	"github.com/cairnrun/cairn/shared/telemetry"
	"github.com/cairnrun/cairn/shared/tools"
	"github.com/cairnrun/cairn/shared/workflow"
)

// Environment variable names read by FromEnv.
const (
	EnvTable       = "CAIRN_TABLE"
	EnvBucket      = "CAIRN_BUCKET"
	EnvQueuePrefix = "CAIRN_QUEUE_URL_" // + MODEL, TOOLS, COMMIT, MODEL_DLQ, …
	EnvRegion      = "AWS_REGION"
	EnvEndpoint    = "AWS_ENDPOINT_URL"
	EnvSandboxDir  = "CAIRN_SANDBOX_DIR"
	EnvLeaseTTL    = "CAIRN_LEASE_TTL_SECONDS"
	// EnvOperators names the principals that may read and cancel
	// everyone's work, comma-separated (lambdafn.ParseOperators: IAM ARNs,
	// roles, "ISSUER|SUBJECT"); only the api function needs it.
	EnvOperators = "CAIRN_OPERATORS"
	// EnvDefaultModel is the model of sessions that name none (default
	// DefaultModel: Bedrock, IAM-authenticated).
	EnvDefaultModel = "CAIRN_DEFAULT_MODEL"
)

// DefaultModel on AWS: Claude on Bedrock through a cross-region inference
// profile; the account must have enabled it in the Bedrock console.
const DefaultModel = "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0"

// Config of the AWS backend.
type Config struct {
	Region     string
	Endpoint   string              // empty: the SDK's default resolution
	Table      string              // DynamoDB table
	Bucket     string              // S3 bucket for claim checks
	QueueURLs  map[string]string   // queue name ("model", "model-dlq", …) → URL
	SandboxDir string              // local sandboxes (no Fargate settings, e.g. a local endpoint); default /tmp/cairn-sandboxes
	Fargate    *Fargate            // sandboxes in ECS tasks; nil = local ones
	Workflows  Workflows           // served with the workflow queue and an isolate
	Getenv     func(string) string // resolves env: secret references; nil = none
	LeaseTTL   time.Duration       // default turn.DefaultLeaseTTL (30 s), renewed every third while a handler works
	// Operators may read and cancel everyone's work (EnvOperators). Every
	// request's principal is the API Gateway authorizer's caller
	// (lambdafn.Authenticate); there is no bearer token on AWS.
	Operators []string
	Env       []string // base environment of sandboxed commands
	Log       *slog.Logger
	// Clock of the store (ttl stamps) and the runtime (leases, ids); nil =
	// the wall clock. Tests set a manual one.
	Clock contracts.Clock
	// AWS overrides the loaded SDK config (tests); nil = config.LoadDefaultConfig.
	AWS *aws.Config
	// Serves: the model clients, Fargate sandboxes and evaluator this
	// process builds (constructors from backend's sub-packages; the zero
	// value checks them only). Boot's argument; all.Serves is everything.
	Serves Serves
}

// Queues every deployment has: the phase queues and their DLQs.
var Queues = []string{
	contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit,
	contracts.DLQ(contracts.QueueModel), contracts.DLQ(contracts.QueueTools), contracts.DLQ(contracts.QueueCommit),
}

// FromEnv reads the configuration; a missing variable is named in the error.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Region: getenv(EnvRegion), Endpoint: getenv(EnvEndpoint), Table: getenv(EnvTable), Bucket: getenv(EnvBucket),
		SandboxDir: getenv(EnvSandboxDir), QueueURLs: map[string]string{}, Getenv: getenv,
	}
	if ops := getenv(EnvOperators); ops != "" {
		c.Operators = strings.Split(ops, ",")
	}
	fg, missing, err := fargateFromEnv(getenv)
	if err != nil {
		return c, err
	}
	c.Fargate = fg
	c.Workflows = workflowsFromEnv(getenv, c.QueueURLs)
	for _, k := range []string{EnvTable, EnvBucket} {
		if getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	for _, q := range Queues {
		k := QueueEnv(q)
		if v := getenv(k); v != "" {
			c.QueueURLs[q] = v
		} else {
			missing = append(missing, k)
		}
	}
	if s := getenv(EnvLeaseTTL); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 3 || n > 3600 {
			return c, fmt.Errorf("%s=%q: want a number of seconds from 3 to 3600 (the lease is renewed every third of it)", EnvLeaseTTL, s)
		}
		c.LeaseTTL = time.Duration(n) * time.Second
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("aws backend: missing environment: %s", strings.Join(missing, ", "))
	}
	return c, nil
}

// QueueEnv is the environment variable holding a queue's URL:
// "model-dlq" → CAIRN_QUEUE_URL_MODEL_DLQ.
func QueueEnv(queue string) string {
	return EnvQueuePrefix + strings.ToUpper(strings.ReplaceAll(queue, "-", "_"))
}

// New builds the SDK clients and adapters and assembles the runtime.
func New(ctx context.Context, c Config) (*assemble.Runtime, error) {
	if c.Table == "" || c.Bucket == "" {
		return nil, errors.New("aws backend: Table and Bucket are required")
	}
	ops, err := lambdafn.ParseOperators(c.Operators)
	if err != nil {
		return nil, fmt.Errorf("aws backend: %s: %w", EnvOperators, err)
	}
	awsCfg, err := awsconfig.Load(ctx, c.AWS, c.Region, c.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("aws backend: %w", err)
	}
	// Every call reports what it used to its handler run's tally
	// (shared/meter): the orchestration part of a turn's cost.
	awsCfg.APIOptions = slices.Clone(awsCfg.APIOptions)
	awsmeter.Instrument(&awsCfg)
	var clock contracts.Clock = contracts.WallClock{}
	if c.Clock != nil {
		clock = c.Clock
	}
	blobs := s3blob.New(s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = c.Endpoint != "" }), c.Bucket)
	store, err := dynamo.New(dynamodb.NewFromConfig(awsCfg), dynamo.Options{Table: c.Table, Blobs: blobs, Clock: clock})
	if err != nil {
		return nil, fmt.Errorf("aws backend: %w", err)
	}
	queue, err := sqsqueue.New(sqs.NewFromConfig(awsCfg), sqsqueue.Options{URLs: c.QueueURLs})
	if err != nil {
		return nil, fmt.Errorf("aws backend: %w", err)
	}
	boxes, err := sandboxes(ctx, c, awsCfg, store, blobs)
	if err != nil {
		return nil, err
	}
	lease := c.LeaseTTL // 0 = turn.DefaultLeaseTTL: short, renewed while a handler works
	getenv := c.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	res := secrets.Resolver{Getenv: getenv, SecretsManager: secretsmanager.NewFromConfig(awsCfg)}
	models := keys.Checks(keys.Config{Getenv: getenv, Secrets: res, Bedrock: true})
	if c.Serves.Models != nil {
		if models, err = c.Serves.Models(getenv, res, awsCfg); err != nil {
			return nil, fmt.Errorf("aws backend: %w", err)
		}
	}
	def := getenv(EnvDefaultModel)
	if def == "" {
		def = DefaultModel
	}
	ports := assemble.Ports{
		Journal: store, Transcript: store, Streams: store, Events: store, Queue: queue,
		Sandboxes: boxes, Registry: tools.NewRegistry(), Models: models,
		Clock: clock, IDs: ids.New(clock),
	}
	if c.Serves.MCP != nil {
		ports.MCP = c.Serves.MCP(res)
	}
	rc := assemble.Config{Owner: "fn_" + ids.RandomHex(6), Authenticate: lambdafn.Authenticate(ops), LeaseTTL: lease, Log: c.Log, DefaultModel: def,
		FlushEvery: StreamFlushEvery, FlushBytes: StreamFlushBytes, WorkflowStarts: WorkflowStarts, MCPServer: c.Serves.MCPServer, Console: c.Serves.Console}
	if c.Getenv != nil {
		prices, err := pricing.FromEnv(c.Getenv) // CAIRN_PRICES over the repository's table
		if err != nil {
			return nil, fmt.Errorf("aws backend: %w", err)
		}
		rc.Prices = &prices
	}
	rc.Meter = orchestrationMeter(rc.Prices, getenv, clock)
	if err := workflowPorts(c, awsCfg, store, &ports, &rc); err != nil {
		return nil, fmt.Errorf("aws backend: %w", err)
	}
	return assemble.New(ports, rc)
}

// orchestrationMeter starts a handler run's tally from what its message
// carried: a phase message adds one Lambda invocation and three SQS
// requests (its send, receive and delete); an API request (m nil) one
// invocation. The run's duration is priced at the function's memory
// (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, which Lambda sets; unset: not priced).
func orchestrationMeter(prices *pricing.Table, getenv func(string) string, clock contracts.Clock) func(context.Context, *contracts.Message) context.Context {
	t := pricing.Default()
	if prices != nil {
		t = *prices
	}
	mem, _ := strconv.Atoi(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
	return func(ctx context.Context, m *contracts.Message) context.Context {
		start := contracts.Orchestration{Invocations: 1}
		submission := ""
		if m != nil {
			if m.Orchestration != nil {
				start = *m.Orchestration
				start.Invocations++
			}
			start.QueueRequests += 3
			submission = m.SubmissionID
		}
		return meter.Start(ctx, meter.Run{Prices: t.AWS, Currency: t.Currency, Submission: submission, Start: start, MemoryMB: max(mem, 0), Now: clock.Now})
	}
}

// StreamFlushEvery is how often a model stream's text is written on AWS:
// each flush is an event item (a write unit and its index copy), so at a
// provider's pace (~20 tokens every ~50 ms) the embedded 50 ms would write
// one item per chunk; every 500 ms, a 4 KB answer is ~6 writes instead of
// ~50, and a reader of the events sees text twice a second.
const StreamFlushEvery = 500 * time.Millisecond

// StreamFlushBytes bounds a text_delta event's text on AWS, JSON-encoded
// (turn.JSONTextLen), so that its
// item (keys, seq, index key, ttl and the JSON body around the text, ~300
// B) stays within one write unit (1 KB) and its one LSI copy: at a
// provider's pace 500 ms of text is ~700-800 B, which an item just over
// 1 KB bills as two units and two index units.
// TestStreamFlushBytesFitsAWriteUnit checks the item's size.
const StreamFlushBytes = 640

// Boot is what every function's main does: read the environment through
// getenv, then New with what the function serves (Serves: the constructors
// its main names, so it links only those). The sandbox base environment is
// PATH only. First it switches the process's dumpable flag off
// (shared/dumpable): no process of the function's user reads its
// credentials through /proc.
func Boot(ctx context.Context, getenv func(string) string, log *slog.Logger, serves Serves) (*assemble.Runtime, error) {
	if err := dumpable.Off(); err != nil {
		return nil, err
	}
	c, err := FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	c.Log, c.Env, c.Serves = log, []string{"PATH=" + getenv("PATH")}, serves
	if err := telemetry.SetupFunction(ctx, getenv, os.Stdout); err != nil {
		return nil, err
	}
	return New(ctx, c)
}

// WorkflowStarts is how many nodes a workflow evaluation starts at once on
// AWS: each start is a few conditional DynamoDB writes and an SQS send, ~8
// round trips; one at a time, a 1,000-node fan-out's first evaluation would
// outlast the workflow function's timeout.
const WorkflowStarts = 16

// CoalesceWakeUps is the workflow function's SQSHandler option: of a
// batch's wake-ups of one run only the last is evaluated (workflow.WakeKey).
var CoalesceWakeUps = lambdafn.Coalesce(workflow.WakeKey)
