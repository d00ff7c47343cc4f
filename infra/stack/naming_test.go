package stack_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairnrun/cairn/infra/stack"
)

// nameLimits: each property the stack names a resource with, and AWS's
// limit for it.
var nameLimits = map[string]int{
	"AWS::SQS::Queue QueueName":                80,
	"AWS::Logs::LogGroup LogGroupName":         512,
	"AWS::Scheduler::ScheduleGroup Name":       64,
	"AWS::ApiGatewayV2::Api Name":              128,
	"AWS::ECS::TaskDefinition Family":          255,
	"AWS::SNS::Topic DisplayName":              100,
	"AWS::DynamoDB::Table TableName":           255,
	"AWS::S3::Bucket BucketName":               63,
	"AWS::Lambda::Function FunctionName":       64,
	"AWS::IAM::Role RoleName":                  64,
	"AWS::SecretsManager::Secret Name":         512,
	"AWS::ECS::Cluster ClusterName":            255,
	"AWS::SNS::Topic TopicName":                256,
	"AWS::CloudWatch::Alarm AlarmName":         255,
	"AWS::CloudWatch::Dashboard DashboardName": 255,
	"AWS::EC2::SecurityGroup GroupName":        255,
	"AWS::ApiGatewayV2::Stage StageName":       128,
	"AWS::ApiGatewayV2::Authorizer Name":       128,
	"AWS::Events::Rule Name":                   64,
	"AWS::Scheduler::Schedule Name":            64,
	"AWS::ECR::Repository RepositoryName":      256,
	"AWS::CloudFormation::Stack (stack name)":  128,
}

// maxPrefix is the longest valid prefix: the longest queue name,
// "<prefix>-<8-character deployment id>-workflow-dlq.fifo", has 27
// characters besides the prefix, and SQS allows 80.
const maxPrefix = 80 - len("-XXXXXXXX-workflow-dlq.fifo")

// The prefix is checked against every name it is part of before anything
// is built: a prefix one character too long (or the 66 characters that
// made SQS names of 84) is refused naming the limit, the longest name and
// the longest prefix that fits; one of the maximum length synthesizes a
// template whose every name, as deployed, fits its limit.
func TestPrefixCheckedAgainstEveryNameLimit(t *testing.T) {
	if maxPrefix != 53 {
		t.Fatalf("maxPrefix %d", maxPrefix)
	}
	prefix := func(n int) string { return "c" + strings.Repeat("x", n-1) }
	base := stack.Props{
		Assets: filepath.Join(root, "dist"), ImageContext: root,
		Stage: stack.Prod, AlarmEmail: alarmEmail, JWTIssuer: jwtIssuer, JWTAudience: jwtAudience,
	}
	for _, n := range []int{maxPrefix + 1, 66} {
		p := base
		p.Prefix = prefix(n)
		_, err := stack.New(nil, p.Prefix, p)
		if err == nil {
			t.Errorf("a %d-character prefix was accepted", n)
			continue
		}
		for _, want := range []string{"SQS queue name", p.Prefix + "-XXXXXXXX-workflow-dlq.fifo", "the limit is 80", "at most 53 characters"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("a %d-character prefix: error %q does not say %q", n, err, want)
			}
		}
	}
	for _, bad := range []string{"cairn_prod", "9cairn", "cairn.prod", "cairn prod"} {
		p := base
		p.Prefix = bad
		if _, err := stack.New(nil, "bad", p); err == nil || !strings.Contains(err.Error(), "letters, digits and hyphens") {
			t.Errorf("prefix %q: error %v", bad, err)
		}
	}

	p := base
	p.Prefix = prefix(maxPrefix)
	app := awscdk.NewApp(&awscdk.AppProps{
		Outdir:  jsii.String(filepath.Join(root, "cdk.out.maxprefix")),
		Context: &map[string]any{"aws:cdk:disable-stack-trace": true},
	})
	s, err := stack.New(app, p.Prefix, p) // main.go names the stack after the prefix
	if err != nil {
		t.Fatalf("the longest valid prefix (%d characters): %v", maxPrefix, err)
	}
	if n := len(*s.StackName()); n > nameLimits["AWS::CloudFormation::Stack (stack name)"] {
		t.Errorf("stack name of %d characters", n)
	}
	tp := &tmpl{name: "max-prefix", s: s, a: assertions.Template_FromStack(s.Stack, nil)}
	tp.res = resources(t, tp.a)
	named := 0
	for id, r := range tp.res {
		for prop, v := range r.Properties {
			limit, known := nameLimits[r.Type+" "+prop]
			if !known {
				if prop == physicalName[r.Type] {
					t.Errorf("%s %s: names it by %s, whose limit this test does not know", id, r.Type, prop)
				}
				continue
			}
			// The longest a deployment id can make it: 8 characters.
			name, ok := deployed(v, stackIDFirst)
			if !ok {
				t.Errorf("%s %s: %s %s is not a name", id, r.Type, prop, js(v))
				continue
			}
			named++
			if len(name) > limit {
				t.Errorf("%s %s: %s %q has %d characters, the limit is %d", id, r.Type, prop, name, len(name), limit)
			}
			if r.Type == "AWS::SQS::Queue" && strings.HasSuffix(name, "-workflow-dlq.fifo") && len(name) != 80 {
				t.Errorf("the longest queue name %q has %d characters, want exactly the limit (80) at the longest prefix", name, len(name))
			}
		}
	}
	if named < 2*len(stack.Queues)+len(stack.Functions) {
		t.Errorf("only %d names checked", named)
	}
}
