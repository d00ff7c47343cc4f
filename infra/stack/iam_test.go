package stack_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// stmt is one IAM statement, resources as canonical JSON.
type stmt struct {
	Sid       string
	Effect    string
	Actions   []string
	Resources []string
	Condition map[string]any
}

func (s stmt) has(action string) bool { return slices.Contains(s.Actions, action) }

// statements returns every statement granted to a role: its inline
// policies and every AWS::IAM::Policy attached to it.
func (tp *tmpl) statements(roleID string) []stmt {
	var out []stmt
	add := func(doc any) {
		for _, raw := range list(obj(doc)["Statement"]) {
			m := obj(raw)
			s := stmt{Sid: str(m["Sid"]), Effect: str(m["Effect"]), Condition: obj(m["Condition"])}
			for _, a := range list(m["Action"]) {
				s.Actions = append(s.Actions, str(a))
			}
			for _, r := range list(m["Resource"]) {
				if rs, ok := r.(string); ok {
					s.Resources = append(s.Resources, rs)
				} else {
					s.Resources = append(s.Resources, js(r))
				}
			}
			out = append(out, s)
		}
	}
	for _, p := range list(tp.props(roleID)["Policies"]) {
		add(obj(p)["PolicyDocument"])
	}
	for _, id := range tp.ofType("AWS::IAM::Policy") {
		p := tp.props(id)
		for _, r := range list(p["Roles"]) {
			if js(r) == ref(roleID) {
				add(p["PolicyDocument"])
			}
		}
	}
	return out
}

func (tp *tmpl) actions(roleID string) []string {
	set := map[string]bool{}
	for _, s := range tp.statements(roleID) {
		for _, a := range s.Actions {
			set[a] = true
		}
	}
	var out []string
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// wildcardResourceExceptions: the only (role, action) pairs allowed on
// resource "*", because AWS offers nothing narrower for them.
func wildcardResourceExceptions(tp *tmpl) map[string]string {
	ex := map[string]string{}
	if b := tp.s.Sandbox; b != nil {
		tools := tp.id(tp.s.Roles[stack.FnTools])
		if b.Network == stack.NetworkPublic {
			// Outside the VPC: only reading a task ENI's public IP, which
			// DescribeNetworkInterfaces (no resource-level permissions) gives.
			ex[tools+" ec2:DescribeNetworkInterfaces"] = "the sandbox task's public IP"
		} else {
			// A function in a VPC: Lambda manages its ENIs with the function's
			// role; EC2's Describe* take no resource, and AWS's own
			// AWSLambdaVPCAccessExecutionRole grants these on "*".
			for _, a := range []string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
				"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"} {
				ex[tools+" "+a] = "Lambda ENIs for the VPC-attached tools function"
			}
		}
		// Pulling the sandboxd image from ECR: GetAuthorizationToken has no
		// resource-level permissions (the pull itself is repository-scoped).
		// A public image needs no ECR login.
		if tp.s.Props.SandboxImage == "" || strings.Contains(tp.s.Props.SandboxImage, ".dkr.ecr.") {
			ex[tp.id(b.Task.ExecutionRole())+" ecr:GetAuthorizationToken"] = "ECR login for the image pull"
		}
	}
	if tp.s.Props.Tracing == stack.TracingADOT {
		// X-Ray has no resource-level permissions: Lambda's segments and
		// the ADOT collector's exporter write on "*".
		for _, fn := range stack.Functions {
			if fn != stack.FnIsolate {
				for _, a := range xrayWrite {
					ex[tp.id(tp.s.Roles[fn])+" "+a] = "X-Ray segments"
				}
			}
		}
	}
	return ex
}

// xrayWrite: what Tracing ACTIVE (and the collector's awsxray exporter)
// needs.
var xrayWrite = []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}

// No role in the stack allows a wildcard action, and resource "*" appears
// only for the listed exceptions.
func TestNoWildcardActionsOrResources(t *testing.T) {
	for _, tp := range all(t) {
		checkWildcards(t, tp)
	}
}

func checkWildcards(t *testing.T, tp *tmpl) {
	t.Helper()
	ex := wildcardResourceExceptions(tp)
	used := map[string]bool{}
	for _, role := range tp.ofType("AWS::IAM::Role") {
		if m := list(tp.props(role)["ManagedPolicyArns"]); len(m) > 0 {
			t.Errorf("%s role %s: managed policies %s (they grant more than it uses)", tp.name, role, js(m))
		}
		for _, s := range tp.statements(role) {
			if s.Effect != "Allow" {
				continue
			}
			for _, a := range s.Actions {
				if strings.Contains(a, "*") {
					t.Errorf("%s role %s: wildcard action %q", tp.name, role, a)
				}
				if slices.Contains(s.Resources, "*") {
					if _, ok := ex[role+" "+a]; !ok {
						t.Errorf("%s role %s: %s on resource \"*\" is not a listed exception", tp.name, role, a)
					}
					used[role+" "+a] = true
				}
			}
		}
	}
	for k, why := range ex {
		if !used[k] {
			t.Errorf("%s: exception %q (%s) no longer used: drop it from the list", tp.name, k, why)
		}
	}
	if ids := tp.ofType("AWS::IAM::ManagedPolicy"); len(ids) > 0 {
		t.Errorf("%s: managed policies %v", tp.name, ids)
	}
}

// Each function's role allows exactly the actions its code calls.
func TestFunctionRolesGrantOnlyWhatTheyUse(t *testing.T) {
	logs := []string{"logs:CreateLogStream", "logs:PutLogEvents"}
	runtime := append([]string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem",
		"s3:GetObject", "s3:ListBucket", "s3:PutObject", "sqs:SendMessage"}, logs...)
	consume := []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}
	secret := []string{"secretsmanager:GetSecretValue"}
	ecs := []string{"ecs:DescribeTasks", "ecs:RunTask", "ecs:StopTask", "ecs:TagResource", "iam:PassRole",
		"ec2:AssignPrivateIpAddresses", "ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface",
		"ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets", "ec2:UnassignPrivateIpAddresses"}
	schedules := []string{"dynamodb:DeleteItem", "iam:PassRole", "scheduler:CreateSchedule", "scheduler:DeleteSchedule", "scheduler:GetSchedule", "scheduler:UpdateSchedule"}
	// With the public network tools is outside the VPC (no ENIs) and reads
	// the task ENI's public IP instead.
	public := []string{"ecs:DescribeTasks", "ecs:RunTask", "ecs:StopTask", "ecs:TagResource", "iam:PassRole", "ec2:DescribeNetworkInterfaces"}
	dev, prod, local := stacks(t)
	pub := publicNet(t)
	for _, tp := range []*tmpl{dev, prod, local, pub} {
		fargate, keys := tp.s.Sandbox != nil, tp == prod
		toolsECS := ecs
		if tp == pub {
			toolsECS = public
		}
		want := map[string][]string{
			stack.FnAPI:      join(runtime, schedules, when(fargate || keys, secret)),
			stack.FnModel:    join(runtime, consume, []string{"bedrock:InvokeModelWithResponseStream"}, when(keys, secret)),
			stack.FnTools:    join(runtime, consume, when(fargate, secret), when(fargate, toolsECS)),
			stack.FnCommit:   join(runtime, consume),
			stack.FnRepair:   join(runtime, []string{"sqs:DeleteMessage", "sqs:ReceiveMessage"}),
			stack.FnWorkflow: join(runtime, consume, []string{"lambda:InvokeFunction"}, when(keys, secret)),
			stack.FnIsolate:  logs,
			stack.FnStream:   join([]string{"dynamodb:GetItem", "dynamodb:Query", "s3:GetObject", "s3:ListBucket"}, logs),
		}
		for fn, w := range want {
			if got := tp.actions(tp.id(tp.s.Roles[fn])); js(got) != js(w) {
				t.Errorf("%s %s role actions\n got %v\nwant %v", tp.name, fn, got, w)
			}
		}
	}
}

// Data-plane grants name this stack's own resources: the table and its
// indexes, the bucket, the queues, the function's own log group.
func TestGrantsNameTheStacksOwnResources(t *testing.T) {
	for _, tp := range all(t) {
		table := getAtt(tp.id(tp.s.Table), "Arn")
		allowed := map[string][]string{
			"dynamodb": {table, js(map[string]any{"Fn::Join": []any{"", []any{map[string]any{"Fn::GetAtt": []string{tp.id(tp.s.Table), "Arn"}}, "/index/*"}}})},
			"s3":       {getAtt(tp.id(tp.s.Bucket), "Arn"), js(map[string]any{"Fn::Join": []any{"", []any{map[string]any{"Fn::GetAtt": []string{tp.id(tp.s.Bucket), "Arn"}}, "/*"}}})},
		}
		for _, q := range tp.s.Queues {
			allowed["sqs"] = append(allowed["sqs"], getAtt(tp.id(q), "Arn"))
		}
		for _, fn := range stack.Functions {
			own := getAtt(tp.id(tp.s.LogGroups[fn]), "Arn")
			for _, s := range tp.statements(tp.id(tp.s.Roles[fn])) {
				for _, a := range s.Actions {
					svc, _, _ := strings.Cut(a, ":")
					ok := allowed[svc]
					if svc == "logs" {
						ok = []string{own}
					} else if ok == nil {
						continue // scoped by their own tests
					}
					for _, r := range s.Resources {
						if !slices.Contains(ok, r) {
							t.Errorf("%s %s: %s on %s, not one of this stack's %s resources", tp.name, fn, a, r, svc)
						}
					}
				}
			}
		}
	}
}

// Model API keys are readable only by the functions that resolve them
// (model; api and workflow, which check a new session's model), and only
// the configured secrets; the sandbox key only by tools and api.
func TestSecretsReadOnlyWhereResolved(t *testing.T) {
	dev, prod, local := stacks(t)
	for _, tp := range []*tmpl{dev, prod, local} {
		for _, fn := range stack.Functions {
			var got []string
			for _, s := range tp.statements(tp.id(tp.s.Roles[fn])) {
				if s.has("secretsmanager:GetSecretValue") {
					got = append(got, s.Resources...)
				}
			}
			var want []string
			if tp == prod && (fn == stack.FnAPI || fn == stack.FnModel || fn == stack.FnWorkflow) {
				want = append(want, anthropicARN, openaiARN)
			}
			if tp.s.Sandbox != nil && (fn == stack.FnAPI || fn == stack.FnTools) {
				want = append(want, ref(tp.id(tp.s.Sandbox.Key)))
			}
			sort.Strings(got)
			sort.Strings(want)
			if js(got) != js(want) {
				t.Errorf("%s %s reads secrets %v, want %v", tp.name, fn, got, want)
			}
		}
	}
}

func join(parts ...[]string) []string {
	set := map[string]bool{}
	for _, p := range parts {
		for _, a := range p {
			set[a] = true
		}
	}
	var out []string
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

func when(cond bool, s []string) []string {
	if cond {
		return s
	}
	return nil
}

// Each function sends only to the queues its code enqueues to.
func TestFunctionsSendOnlyWhereTheirCodeEnqueues(t *testing.T) {
	want := map[string][]string{
		// a function that starts a session's next turn may resume a retried
		// one in the phase it failed in (turn.resume): every phase queue
		stack.FnAPI:      stack.Queues,
		stack.FnModel:    stack.Queues,
		stack.FnTools:    stack.Queues,
		stack.FnCommit:   stack.Queues,
		stack.FnRepair:   stack.Queues,
		stack.FnWorkflow: stack.Queues,
		stack.FnIsolate:  nil,
		stack.FnStream:   nil,
	}
	for _, tp := range all(t) {
		for fn, queues := range want {
			var got, exp []string
			for _, s := range tp.statements(tp.id(tp.s.Roles[fn])) {
				if s.has("sqs:SendMessage") {
					got = append(got, s.Resources...)
				}
			}
			for _, q := range queues {
				exp = append(exp, getAtt(tp.id(tp.s.Queues[q]), "Arn"))
			}
			sort.Strings(got)
			sort.Strings(exp)
			if js(got) != js(exp) {
				t.Errorf("%s %s sends to %v, want %v", tp.name, fn, got, exp)
			}
		}
	}
}

// Each phase function may change the visibility of messages on its own
// queue and no other (the handler keeps a message's visibility short while
// it works, so a crash or timeout redelivers within ~30 s); api, repair and
// the isolate may not change any.
func TestPhasesChangeVisibilityOnlyOnTheirOwnQueue(t *testing.T) {
	own := map[string]string{stack.FnModel: stack.QueueModel, stack.FnTools: stack.QueueTools, stack.FnCommit: stack.QueueCommit, stack.FnWorkflow: stack.QueueWorkflow}
	for _, tp := range all(t) {
		for _, fn := range stack.Functions {
			var explicit bool
			for _, s := range tp.statements(tp.id(tp.s.Roles[fn])) {
				if !s.has("sqs:ChangeMessageVisibility") {
					continue
				}
				q, phase := own[fn]
				if !phase || js(s.Resources) != js([]string{getAtt(tp.id(tp.s.Queues[q]), "Arn")}) {
					t.Errorf("%s %s: sqs:ChangeMessageVisibility on %v", tp.name, fn, s.Resources)
				}
				explicit = explicit || (s.Sid == "KeepVisibilityShort" && js(s.Actions) == `["sqs:ChangeMessageVisibility"]`)
			}
			if _, phase := own[fn]; phase && !explicit {
				t.Errorf("%s %s: no KeepVisibilityShort statement", tp.name, fn)
			}
		}
	}
}
