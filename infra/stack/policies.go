package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// sends: the queues each function's handlers enqueue to (the Enqueue and
// Queue.Send call sites). Any phase can end a turn (FAILED: a tripped
// limit, exhausted attempts, a model error): ending wakes the turn's
// workflow run, if it is a node (workflow), and starts the session's next
// turn (model). The event source mapping separately grants each consumer
// receive/delete on its own queue.
//
// Every function that starts a session's next turn (accept, the end of a
// turn, a workflow's node turns) may start a retried one, which resumes in
// the phase it failed in — the commit phase included (turn.resume): so
// each of them sends to the commit queue too.
var sends = map[string][]string{
	FnAPI:      {QueueModel, QueueTools, QueueCommit, QueueWorkflow}, // accept → model; approval decision → tools; run start → workflow
	FnModel:    {QueueModel, QueueTools, QueueCommit, QueueWorkflow}, // tool calls → tools; a failed or committed turn ends
	FnTools:    {QueueModel, QueueTools, QueueCommit, QueueWorkflow}, // next step → model; run_workflow starts a run; a failed turn ends
	FnCommit:   {QueueModel, QueueTools, QueueCommit, QueueWorkflow}, // the session's next turn; a node's result wakes its run
	FnRepair:   {QueueModel, QueueTools, QueueCommit, QueueWorkflow}, // re-drives every phase; fails poison turns
	FnWorkflow: {QueueModel, QueueTools, QueueCommit, QueueWorkflow}, // nodes' turns → model; a finished run wakes its caller's tools phase; re-evaluation
}

// runtime functions: the ones assembled by the AWS backend, shared/aws/backend (all but the isolate).
var runtimeFunctions = []string{FnAPI, FnModel, FnTools, FnCommit, FnRepair, FnWorkflow}

// grant gives each role exactly the actions its code calls, on the
// resources it calls them on. Each statement carries a Sid naming why.
func (s *Stack) grant() {
	allow := func(fn, sid string, actions []string, resources ...*string) {
		s.Roles[fn].AddToPrincipalPolicy(statement(sid, actions, resources))
	}
	table := []*string{s.Table.TableArn(), jsii.String(*s.Table.TableArn() + "/index/*")}
	for _, fn := range runtimeFunctions {
		// shared/aws/dynamo: GetItem, PutItem, UpdateItem, Query, and
		// BatchGetItem (workflow runs) — no scans, batch writes or
		// transactions, and deletes only of schedules by the api (below).
		allow(fn, "Journal", []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}, table...)
		// shared/aws/s3blob: create-if-absent PutObject and GetObject.
		allow(fn, "ClaimChecks", []string{"s3:GetObject", "s3:PutObject"}, s.Bucket.ArnForObjects(jsii.String("*")))
		// ListBucket only so that a missing key reads as 404 (ErrNotFound),
		// not 403.
		allow(fn, "ClaimCheckMisses", []string{"s3:ListBucket"}, s.Bucket.BucketArn())
		var queues []*string
		for _, q := range sends[fn] {
			queues = append(queues, s.Queues[q].QueueArn())
		}
		allow(fn, "Enqueue", []string{"sqs:SendMessage"}, queues...)
	}

	// Each phase keeps the visibility of the message it works on short,
	// extending it while it works (lambdafn), so a crash or timeout
	// redelivers within about a lease instead of after the queue's
	// visibility timeout. Only on its own queue. (The event source mapping
	// grants the same with receive and delete; stated here because the
	// handler calls it.)
	for _, q := range Queues {
		allow(consumerOf(q), "KeepVisibilityShort", []string{"sqs:ChangeMessageVisibility"}, s.Queues[q].QueueArn())
	}

	// repair turns dead-lettered wake-ups into FAILED: it reads and deletes
	// them from every DLQ.
	var dlqs []*string
	for _, q := range Queues {
		dlqs = append(dlqs, s.Queues[DLQ(q)].QueueArn())
	}
	allow(FnRepair, "DrainDeadLetters", []string{"sqs:ReceiveMessage", "sqs:DeleteMessage"}, dlqs...)

	// model: Bedrock ConverseStream (IAM only, no key), on foundation
	// models (cross-region inference profiles route to any region) and this
	// account's inference profiles.
	allow(FnModel, "Bedrock", []string{"bedrock:InvokeModelWithResponseStream"},
		s.arn("bedrock", "*", "", "foundation-model/*"),
		s.arn("bedrock", "", "", "inference-profile/*"))

	// Model API keys: whoever resolves them — model calls the provider; api
	// and workflow check a session's model when creating it, which reads
	// the key (providers.checked.CheckModel).
	var keys []*string
	for _, arn := range []string{s.Props.AnthropicKeyARN, s.Props.OpenAIKeyARN} {
		if arn != "" {
			keys = append(keys, jsii.String(arn))
		}
	}
	if len(keys) > 0 {
		for _, fn := range []string{FnAPI, FnModel, FnWorkflow} {
			allow(fn, "ModelKeys", []string{"secretsmanager:GetSecretValue"}, keys...)
		}
	}

	// workflow: evaluates scripts in the isolate, nothing else.
	allow(FnWorkflow, "Isolate", []string{"lambda:InvokeFunction"}, s.Functions[FnIsolate].FunctionArn())

	// api: schedules (shared/workflow/schedule.EventBridge: create, read back on a
	// conflict, update — pause and resume rewrite the whole definition,
	// target role included, hence PassRole — and delete) in its own group
	// only, passing only the scheduler role.
	allow(FnAPI, "Schedules", []string{"scheduler:CreateSchedule", "scheduler:GetSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule"},
		s.arn("scheduler", "", "", "schedule/"+*s.SchedulerGroup.Ref()+"/*"))
	s.Roles[FnAPI].AddToPrincipalPolicy(passRole("PassSchedulerRole", "scheduler.amazonaws.com", s.SchedulerRole.RoleArn()))
	// api: deleting a schedule deletes its record (shared/aws/dynamo
	// DeleteSchedule) — the one DeleteItem in the runtime, allowed only on
	// items whose partition key is a schedule's (SCHED#<id>).
	deletes := statement("DeleteSchedules", []string{"dynamodb:DeleteItem"}, []*string{s.Table.TableArn()})
	deletes.AddCondition(jsii.String("ForAllValues:StringLike"), &map[string]interface{}{"dynamodb:LeadingKeys": []string{"SCHED#*"}})
	s.Roles[FnAPI].AddToPrincipalPolicy(deletes)

	s.grantStream()
	if s.Sandbox != nil {
		s.grantSandboxes()
	}
}

// grantSandboxes: the tools function runs sandbox tasks; api builds the
// same sandbox provider to check specs, which reads the key at boot.
func (s *Stack) grantSandboxes() {
	b := s.Sandbox
	for _, fn := range []string{FnAPI, FnTools} {
		s.Roles[fn].AddToPrincipalPolicy(statement("SandboxKey", []string{"secretsmanager:GetSecretValue"}, []*string{b.Key.SecretArn()}))
	}
	tools := s.Roles[FnTools]
	// RunTask of the sandboxd task definition, in this cluster only.
	run := statement("RunSandbox", []string{"ecs:RunTask"}, []*string{b.Task.TaskDefinitionArn()})
	run.AddCondition(jsii.String("ArnEquals"), &map[string]interface{}{"ecs:cluster": b.Cluster.ClusterArn()})
	tools.AddToPrincipalPolicy(run)
	tasks := s.arn("ecs", "", "", "task/"+*b.Cluster.ClusterName()+"/*")
	tools.AddToPrincipalPolicy(statement("WatchSandboxes", []string{"ecs:DescribeTasks", "ecs:StopTask"}, []*string{tasks}))
	// RunTask tags the task with its session (fargate.SessionTag); tagging
	// on create needs TagResource, for RunTask only.
	tag := statement("TagSandboxOnRun", []string{"ecs:TagResource"}, []*string{tasks})
	tag.AddCondition(jsii.String("StringEquals"), &map[string]interface{}{"ecs:CreateAction": "RunTask"})
	tools.AddToPrincipalPolicy(tag)
	tools.AddToPrincipalPolicy(passRole("PassSandboxRoles", "ecs-tasks.amazonaws.com", b.TaskRole.RoleArn(), b.Task.ExecutionRole().RoleArn()))
	if b.Network == NetworkPublic {
		// The task's public IP is on its ENI, which DescribeTasks names but
		// does not describe; DescribeNetworkInterfaces takes no resource
		// (fargate.NewEC2 reads it while a new task comes up). Only tools
		// places sandboxes (api only checks specs, which calls nothing).
		// Listed in the exceptions test.
		tools.AddToPrincipalPolicy(statement("ReadSandboxPublicIP", []string{"ec2:DescribeNetworkInterfaces"}, []*string{jsii.String("*")}))
		return
	}
	// Lambda creates the function's ENIs in the VPC with its role. EC2's
	// network-interface actions take no resource scoping that Lambda's
	// calls satisfy (Describe* none at all): AWS documents "*"
	// (AWSLambdaVPCAccessExecutionRole). Listed in the exceptions test.
	tools.AddToPrincipalPolicy(statement("VpcNetworkInterfaces", []string{
		"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
		"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
	}, []*string{jsii.String("*")}))
	// The endpoints admit only these roles (sandbox.go).
	s.addEndpointPolicies()
}

func statement(sid string, actions []string, resources []*string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String(sid), Actions: jsii.Strings(actions...), Resources: &resources,
	})
}

// passRole allows iam:PassRole on roles, to one service only.
func passRole(sid, service string, roles ...*string) awsiam.PolicyStatement {
	st := statement(sid, []string{"iam:PassRole"}, roles)
	st.AddCondition(jsii.String("StringEquals"), &map[string]interface{}{"iam:PassedToService": service})
	return st
}

// arn formats an ARN in this stack's partition; region "" = the stack's,
// "*" = any; account "" = the stack's unless region is "*" (AWS-owned).
func (s *Stack) arn(service, region, account, resource string) *string {
	c := &awscdk.ArnComponents{Service: jsii.String(service), Resource: jsii.String(resource), ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME}
	if region != "" {
		c.Region = jsii.String(region)
		c.Account = jsii.String(account)
	}
	return s.FormatArn(c)
}
