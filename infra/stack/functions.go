package stack

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// fnSpec is one function's size and, for the SQS-fed ones, its event
// source mapping.
type fnSpec struct {
	memory  int // MB
	timeout int // seconds
	queue   string
	batch   int // records per invocation
	maxConc int // the event source's maximum concurrency (2..1000)
	about   string
}

// specs: memory is small because every runtime function mostly waits (on
// the model, a sandbox, DynamoDB) and Lambda bills the waiting by memory
// size (docs/DEPLOY.md); the isolate gets more, its scripts' memory limit
// derives from it. Timeouts follow the work. model streams one step (a long answer
// takes minutes); tools may wait for a Fargate task to start (≤ 2 min) and
// run a command (≤ 10 min); commit and workflow only write records (the
// driver also waits for the isolate, ≤ 30 s). model and tools take one
// record per invocation (each is long; parallelism comes from concurrency);
// commit and workflow batch. maxConc is the default of each phase's
// reserved concurrency (concurrency.go).
var specs = map[string]fnSpec{
	FnAPI:      {memory: 256, timeout: 29, about: "HTTP API (API Gateway HTTP API v2 events)"},
	FnModel:    {memory: 256, timeout: 600, queue: QueueModel, batch: 1, maxConc: 20, about: "model phase: one streamed model step"},
	FnTools:    {memory: 256, timeout: 900, queue: QueueTools, batch: 1, maxConc: 20, about: "tools phase: tool calls in the session's Fargate sandbox"},
	FnCommit:   {memory: 256, timeout: 60, queue: QueueCommit, batch: 10, maxConc: 10, about: "commit phase: moves the session head, starts the next turn"},
	FnRepair:   {memory: 256, timeout: RepairTimeoutSeconds, about: "repair, every minute: re-drives stuck submissions, drains the DLQs"},
	FnWorkflow: {memory: 256, timeout: 120, queue: QueueWorkflow, batch: 5, maxConc: 10, about: "workflow driver: evaluates runs through the isolate, starts nodes"},
	FnIsolate:  {memory: 512, timeout: 30, about: "workflow script isolate: no permissions, no environment"},
	// stream holds one client's event stream for up to 10 minutes, billed
	// all along, reading the journal four times a second: the least memory.
	FnStream: {memory: 128, timeout: StreamTimeoutSeconds, about: "event streams (SSE) from a function URL with a streamed response: reads only"},
}

// Leases (shared/turn): short and renewed. A handler renews its lease on a
// heartbeat every LeaseTTLSeconds/3 while it works, so a holder that dies
// (crash, kill, timeout) lets its lease lapse within LeaseTTLSeconds and
// the retry or repair's re-drive takes over — instead of waiting out the
// longest phase timeout. LeaseTTLSeconds is CAIRN_LEASE_TTL_SECONDS.
const (
	LeaseTTLSeconds       = 30
	LeaseHeartbeatSeconds = LeaseTTLSeconds / 3
)

// RepairTimeoutSeconds: EventBridge invokes repair every minute, and each
// invocation makes a pass every few seconds (repair.Passes: every 10 s by
// default) until its deadline is less than a pass and 15 s away — about
// 55 s of passes in 70 s, so recovery never waits for the next minute and
// the last pass has room to finish.
const RepairTimeoutSeconds = 70

// addFunctions creates every function with its role and log group: the
// isolate first (the workflow driver names it), then the runtime's.
func (s *Stack) addFunctions() {
	// The isolate: no environment at all, a role that can only write its
	// own logs, outside the VPC (a VPC would need ENI permissions on its
	// role), and reserved concurrency so scripts cannot starve the runtime.
	iso := s.function(FnIsolate, nil, false)

	common := s.commonEnv()
	// Every runtime function assembles the workflow driver (api: the
	// workflow routes; tools: run_workflow; any phase: a node's turn ending
	// records its result) — which the AWS backend (shared/aws/backend) does only when it knows the
	// isolate. Only the workflow function may invoke it (policies.go).
	common[EnvIsolateFunction] = iso.FunctionName()
	env := func(extra ...map[string]*string) map[string]*string {
		m := map[string]*string{}
		for k, v := range common {
			m[k] = v
		}
		for _, e := range extra {
			for k, v := range e {
				m[k] = v
			}
		}
		return m
	}
	keys, sandbox := s.modelKeyEnv(), s.sandboxEnv()
	// api: creates sessions (checks the model and the sandbox spec there,
	// which resolves keys) and schedules; it alone authorizes, so it alone
	// knows the operators.
	apiEnv := map[string]*string{
		EnvSchedulerGroup:   s.SchedulerGroup.Ref(),
		EnvSchedulerRoleARN: s.SchedulerRole.RoleArn(),
		EnvWorkflowQueueARN: s.Queues[QueueWorkflow].QueueArn(),
	}
	if len(s.Props.Operators) > 0 {
		apiEnv[EnvOperators] = jsii.String(strings.Join(s.Props.Operators, ","))
	}
	s.function(FnAPI, env(keys, sandbox, apiEnv), false)
	s.function(FnModel, env(keys), false)
	if s.Sandbox != nil {
		// In the VPC only with the private network; with the public one it
		// reaches the tasks' public IPs (and AWS) from outside it.
		s.function(FnTools, env(sandbox), s.Sandbox.Network == NetworkPrivate)
	} else {
		s.function(FnTools, env(map[string]*string{EnvSandboxDir: jsii.String("/tmp/cairn-sandboxes")}), false)
	}
	s.function(FnCommit, env(), false)
	s.function(FnRepair, env(), false)
	// workflow: creates the nodes' sessions (checking their model, which
	// resolves keys) and invokes the isolate.
	s.function(FnWorkflow, env(keys), false)
	s.addStream()
}

// commonEnv is what backend.FromEnv requires of every runtime function.
func (s *Stack) commonEnv() map[string]*string {
	m := map[string]*string{
		EnvTable:        s.Table.TableName(),
		EnvBucket:       s.Bucket.BucketName(),
		EnvLeaseTTL:     jsii.String(strconv.Itoa(LeaseTTLSeconds)),
		EnvDefaultModel: jsii.String(s.Props.DefaultModel),
	}
	for name, q := range s.Queues {
		m[QueueEnv(name)] = q.QueueUrl()
	}
	return m
}

// modelKeyEnv: references (ARNs) to the model API keys, when configured.
func (s *Stack) modelKeyEnv() map[string]*string {
	m := map[string]*string{}
	if s.Props.AnthropicKeyARN != "" {
		m[EnvAnthropicKey] = jsii.String(s.Props.AnthropicKeyARN)
	}
	if s.Props.OpenAIKeyARN != "" {
		m[EnvOpenAIKey] = jsii.String(s.Props.OpenAIKeyARN)
	}
	return m
}

// sandboxEnv: the Fargate settings (the AWS backend's CAIRN_SANDBOX_*); none
// without Fargate sandboxes.
func (s *Stack) sandboxEnv() map[string]*string {
	b := s.Sandbox
	if b == nil {
		return nil
	}
	var subnets []string
	for _, sn := range b.sandboxSubnets() {
		subnets = append(subnets, *sn.SubnetId())
	}
	m := map[string]*string{
		EnvSandboxCluster:        b.Cluster.ClusterName(),
		EnvSandboxTaskDefinition: b.Task.TaskDefinitionArn(),
		EnvSandboxContainer:      jsii.String(SandboxContainer),
		EnvSandboxSubnets:        jsii.String(strings.Join(subnets, ",")),
		EnvSandboxSecurityGroups: b.TaskSG.SecurityGroupId(),
		EnvSandboxKeySecret:      b.Key.SecretArn(),
		EnvSandboxIdle:           jsii.String(strconv.Itoa(SandboxIdleSeconds)),
		// Not read by the runtime yet (names.go): which network, and with
		// the public one the group of `network: internet` sessions.
		EnvSandboxNetwork: jsii.String(b.Network),
	}
	if b.InternetSG != nil {
		m[EnvSandboxInternetSecurityGroups] = b.InternetSG.SecurityGroupId()
	}
	return m
}

// function creates one function from Assets/<name>/bootstrap: arm64,
// provided.al2023, JSON logs into a log group of its own with the stage's
// retention, a role of its own that starts with nothing but writing those
// logs (no managed policies: the basic execution policy would allow every
// log group), and its reserved concurrency (concurrency.go). inVPC places
// it in the sandbox VPC's isolated subnets. Every function but the isolate
// exports traces as Props.Tracing says (tracing.go).
func (s *Stack) function(name string, env map[string]*string, inVPC bool) awslambda.Function {
	spec := specs[name]
	id := title(name)
	logs := s.logGroup(id+"Logs", name)
	role := awsiam.NewRole(s.Stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("cairn " + name + " function"),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("OwnLogs"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logs.LogGroupArn()),
	}))
	props := &awslambda.FunctionProps{
		Description:           jsii.String("cairn " + spec.about),
		Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:          functionArch(),
		Handler:               jsii.String("bootstrap"),
		Code:                  awslambda.Code_FromAsset(jsii.String(filepath.Join(s.Props.Assets, name)), nil),
		MemorySize:            jsii.Number(float64(spec.memory)),
		Timeout:               awscdk.Duration_Seconds(jsii.Number(float64(spec.timeout))),
		Role:                  role,
		LogGroup:              logs,
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		Tracing:               awslambda.Tracing_DISABLED,
	}
	if env != nil {
		props.Environment = &env
	}
	if name != FnIsolate {
		s.trace(name, env, props) // Props.Tracing (tracing.go)
	}
	props.ReservedConcurrentExecutions = jsii.Number(float64(s.Props.ReservedConcurrency()[name]))
	if inVPC {
		props.Vpc = s.Sandbox.Vpc
		props.VpcSubnets = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}
		props.SecurityGroups = &[]awsec2.ISecurityGroup{s.Sandbox.ToolsSG}
	}
	if name == FnRepair {
		// Invoked asynchronously by its schedule: no retries of a failed
		// or timed-out invocation, and an event that could not start
		// within a minute (throttled) is dropped — the next minute's
		// invocation does the same work.
		props.RetryAttempts = jsii.Number(0)
		props.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(60))
	}
	fn := awslambda.NewFunction(s.Stack, jsii.String(id+"Function"), props)
	s.Functions[name], s.Roles[name], s.LogGroups[name] = fn, role, logs
	return fn
}

// logGroup creates a log group with the stage's retention and removal
// policy, named /<prefix>/<deployment id>/<name>: a retained group never
// blocks the next creation of the stack (naming.go).
func (s *Stack) logGroup(id, name string) awslogs.LogGroup {
	return awslogs.NewLogGroup(s.Stack, jsii.String(id), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(logGroupName(s.Props.Prefix, s.deploymentID(), name)),
		Retention:     s.settings().logRetention,
		RemovalPolicy: s.settings().removal,
	})
}

// addEventSources feeds each SQS queue to its function, reporting batch
// item failures (lambdafn.SQSHandler returns them: the failed record and
// every later one of its FIFO batch) with a bounded concurrency: the
// function's reserved concurrency, so the poller never invokes beyond
// what is reserved (which would only be throttled).
func (s *Stack) addEventSources() {
	for _, q := range Queues {
		name := consumerOf(q)
		spec := specs[name]
		s.Functions[name].AddEventSource(awslambdaeventsources.NewSqsEventSource(s.Queues[q], &awslambdaeventsources.SqsEventSourceProps{
			BatchSize:               jsii.Number(float64(spec.batch)),
			MaxConcurrency:          jsii.Number(float64(s.Props.ReservedConcurrency()[name])),
			ReportBatchItemFailures: jsii.Bool(true),
		}))
	}
}
