package stack

import "strings"

// Names fixed by the runtime. The stack hands them to the functions; the
// functions read them through backend.FromEnv. TestNamesMatchTheRuntime
// reads the same constants from the runtime's source (shared/aws/backend,
// shared/aws/dynamo, shared/contracts, shared/model/providers), so a rename
// there fails here instead of in a deployed function.
const (
	EnvTable        = "CAIRN_TABLE"
	EnvBucket       = "CAIRN_BUCKET"
	EnvQueuePrefix  = "CAIRN_QUEUE_URL_"
	EnvLeaseTTL     = "CAIRN_LEASE_TTL_SECONDS"
	EnvDefaultModel = "CAIRN_DEFAULT_MODEL"
	EnvAnthropicKey = "CAIRN_ANTHROPIC_KEY" // a secret reference (an ARN here)
	EnvOpenAIKey    = "CAIRN_OPENAI_KEY"
	EnvSandboxDir   = "CAIRN_SANDBOX_DIR"
	// EnvOperators: the principals that may read and cancel everyone's
	// work, comma-separated (Props.Operators); set on the functions that
	// authorize callers — api and stream — only, and only when there are
	// any.
	EnvOperators = "CAIRN_OPERATORS"

	EnvSandboxCluster        = "CAIRN_SANDBOX_CLUSTER"
	EnvSandboxTaskDefinition = "CAIRN_SANDBOX_TASK_DEFINITION"
	EnvSandboxContainer      = "CAIRN_SANDBOX_CONTAINER"
	EnvSandboxSubnets        = "CAIRN_SANDBOX_SUBNETS"
	EnvSandboxSecurityGroups = "CAIRN_SANDBOX_SECURITY_GROUPS"
	EnvSandboxKeySecret      = "CAIRN_SANDBOX_KEY_SECRET"
	EnvSandboxIdle           = "CAIRN_SANDBOX_IDLE_SECONDS"
	// The sandbox network (NetworkPrivate or NetworkPublic: public means
	// RunTask with a public IP, dialled with TLS pinned to the sandbox's
	// certificate), and with NetworkPublic the security group of sessions
	// whose spec asks for `network: internet` (the
	// CAIRN_SANDBOX_SECURITY_GROUPS group has no internet beyond the image
	// pull and logs). Read by shared/aws/backend/sandboxes.go.
	EnvSandboxNetwork                = "CAIRN_SANDBOX_NETWORK"
	EnvSandboxInternetSecurityGroups = "CAIRN_SANDBOX_INTERNET_SECURITY_GROUPS"

	// Workflows (shared/aws/backend/workflows.go): with the isolate's name a
	// function assembles the workflow driver (only the workflow function
	// invokes it); with the group, role and queue ARN the api creates
	// EventBridge Scheduler schedules targeting the workflow queue.
	EnvIsolateFunction  = "CAIRN_ISOLATE_FUNCTION"
	EnvSchedulerGroup   = "CAIRN_SCHEDULER_GROUP"
	EnvSchedulerRoleARN = "CAIRN_SCHEDULER_ROLE_ARN"
	EnvWorkflowQueueARN = "CAIRN_WORKFLOW_QUEUE_ARN"

	// DefaultModel on AWS (backend.DefaultModel): Claude on Bedrock
	// through a cross-region inference profile.
	DefaultModel = "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0"

	// The sandbox container: its name (fargate's default container) and the
	// control port sandboxd listens on (functions/sandboxd/Dockerfile).
	SandboxContainer = "sandboxd"
	SandboxPort      = 7070

	// DynamoDB single-table layout (shared/aws/dynamo).
	AttrPK       = "pk"
	AttrSK       = "sk"
	AttrGSIPK    = "gsi1pk"
	AttrGSISK    = "gsi1sk"
	AttrLSK      = "lsk"
	IndexGSI     = "gsi1"
	IndexLSI     = "lsi1"
	TTLAttribute = "ttl"
)

// Queue names as the runtime knows them (contracts.QueueModel, …); each has
// a dead-letter queue DLQ(name).
const (
	QueueModel    = "model"
	QueueTools    = "tools"
	QueueCommit   = "commit"
	QueueWorkflow = "workflow"
)

// Queues are the main (SQS-fed) queues, in a fixed order.
var Queues = []string{QueueModel, QueueTools, QueueCommit, QueueWorkflow}

// DLQ is the dead-letter queue of a queue (contracts.DLQ).
func DLQ(queue string) string { return queue + "-dlq" }

// QueueEnv is the variable holding a queue's URL (backend.QueueEnv):
// "model-dlq" → CAIRN_QUEUE_URL_MODEL_DLQ.
func QueueEnv(queue string) string {
	return EnvQueuePrefix + strings.ToUpper(strings.ReplaceAll(queue, "-", "_"))
}

// Function names: one directory dist/<name>/bootstrap each.
const (
	FnAPI      = "api"
	FnModel    = "model"
	FnTools    = "tools"
	FnCommit   = "commit"
	FnRepair   = "repair"
	FnWorkflow = "workflow"
	FnIsolate  = "isolate"
	// FnStream serves the event streams (server-sent events) from a
	// function URL whose responses stream: API Gateway buffers them.
	FnStream = "stream"
)

// Functions are every Lambda the stack deploys, in a fixed order.
var Functions = []string{FnAPI, FnModel, FnTools, FnCommit, FnRepair, FnWorkflow, FnIsolate, FnStream}

// SSEMaxDurationSeconds is how long one event stream lasts before it ends
// with "expired" and the client resumes with Last-Event-ID
// (api.SSEMaxDuration; TestStreamOutlastsItsStream reads it from the
// runtime's source).
const SSEMaxDurationSeconds = 600

// StreamTimeoutSeconds is the stream function's timeout: a stream's
// SSEMaxDurationSeconds and a minute, so a stream always runs its full
// length and ends with its "expired" message, never cut by the timeout.
// (Were the timeout shorter, the runtime would end the stream with
// "expired" api.SSEDeadlineMargin before it; Lambda allows 900 s.)
const StreamTimeoutSeconds = SSEMaxDurationSeconds + 60
