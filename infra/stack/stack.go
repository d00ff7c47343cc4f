package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Stack is the whole deployment. Its fields name the parts so tests (and
// readers) can find them in the synthesized template.
type Stack struct {
	awscdk.Stack
	Props Props // with defaults applied

	Table  awsdynamodb.Table
	Bucket awss3.Bucket
	// Queues by runtime name: "model", "model-dlq", …, "workflow-dlq".
	Queues map[string]awssqs.Queue

	Functions map[string]awslambda.Function // by function name
	Roles     map[string]awsiam.Role        // each function's execution role
	LogGroups map[string]awslogs.LogGroup   // each function's log group

	Sandbox *Sandbox // nil with SandboxesLambda

	SchedulerGroup awsscheduler.CfnScheduleGroup
	SchedulerRole  awsiam.Role
	API            awsapigatewayv2.HttpApi
	StreamURL      awslambda.FunctionUrl // the stream function's (stream.go)
	Topic          awssns.Topic          // nil without an alarm email
	Alarms         []awscloudwatch.Alarm
	Dashboard      awscloudwatch.Dashboard // dashboard.go
	AccessLogs     awslogs.LogGroup

	depID string // deploymentID's expression, once made
}

// stage settings that differ between dev and prod. removal applies to
// what holds data or evidence — the table, the bucket, the logs, the
// sandbox key; the queues hold only wake-ups (the journal is the truth)
// and are deleted with the stack in every stage (queues.go).
type stageSettings struct {
	removal      awscdk.RemovalPolicy
	protect      bool // DynamoDB deletion protection
	logRetention awslogs.RetentionDays
}

func settings(s Stage) stageSettings {
	if s == Prod {
		return stageSettings{removal: awscdk.RemovalPolicy_RETAIN, protect: true, logRetention: awslogs.RetentionDays_THREE_MONTHS}
	}
	return stageSettings{removal: awscdk.RemovalPolicy_DESTROY, protect: false, logRetention: awslogs.RetentionDays_ONE_WEEK}
}

// New builds the stack under scope. It fails before creating anything if
// the props are invalid or a function's bootstrap is missing.
func New(scope constructs.Construct, id string, props Props) (*Stack, error) {
	p, err := props.withDefaults()
	if err != nil {
		return nil, err
	}
	if p.Description == nil {
		p.Description = jsii.String("cairn (" + string(p.Stage) + "): durable agent runtime — API, phase functions, queues, journal, sandboxes")
	}
	s := &Stack{
		Stack: awscdk.NewStack(scope, &id, &p.StackProps), Props: p,
		Queues: map[string]awssqs.Queue{}, Functions: map[string]awslambda.Function{},
		Roles: map[string]awsiam.Role{}, LogGroups: map[string]awslogs.LogGroup{},
	}
	s.addData()
	s.addQueues()
	if p.Sandboxes == SandboxesFargate {
		s.addSandbox()
	}
	s.addSchedulerTarget()
	s.addFunctions()
	s.grant()
	s.addEventSources()
	s.addAPI()
	s.addRepairSchedule()
	s.addAlarms()
	s.addDashboard()
	s.addOutputs()
	return s, nil
}

func (s *Stack) settings() stageSettings { return settings(s.Props.Stage) }

func (s *Stack) addOutputs() {
	out := func(id string, v *string) {
		awscdk.NewCfnOutput(s.Stack, jsii.String(id), &awscdk.CfnOutputProps{Value: v})
	}
	out("ApiEndpoint", s.API.ApiEndpoint())
	// The event streams (SSE), signed with SigV4 for the service "lambda".
	out("StreamUrl", s.StreamURL.Url())
	// What a caller's identity policy names (lambda:InvokeFunctionUrl, lambda:InvokeFunction).
	out("StreamFunctionArn", s.Functions[FnStream].FunctionArn())
	// The deployment id in the queue and log group names (naming.go):
	// /<prefix>/<id>/<function> holds a function's logs.
	out("DeploymentId", jsii.String(s.deploymentID()))
	out("TableName", s.Table.TableName())
	out("BucketName", s.Bucket.BucketName())
	out("ModelQueueUrl", s.Queues[QueueModel].QueueUrl())
	out("WorkflowQueueUrl", s.Queues[QueueWorkflow].QueueUrl())
	out("ScheduleGroup", s.SchedulerGroup.Ref())
	out("DashboardName", s.Dashboard.DashboardName())
	if s.Sandbox != nil {
		out("SandboxCluster", s.Sandbox.Cluster.ClusterName())
	}
}
