package stack

import (
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// Physical names. The stack sets a name only where a person looks for it
// (queues, log groups, the schedule group, the API, the task family); the
// table, bucket, functions, roles, secret, cluster and alarms get
// CloudFormation's generated names.
//
// A name that outlives its stack must not be fixed: a retained log group
// called /cairn-prod/model makes the next creation of cairn-prod fail
// ("already exists") after a failed first deploy or a destroy. So every
// name of a resource that may be retained, and the queues' (SQS refuses a
// deleted queue's name for 60 s), carries the deployment id: the first
// group of the stack id's UUID (arn:…:stack/<name>/<uuid>), new for every
// creation of the stack, fixed for its updates.

// DeploymentIDLength is the length of the deployment id (8 hex digits).
const DeploymentIDLength = 8

// deploymentIDPlaceholder stands for the deployment id where a name is
// measured before deployment.
var deploymentIDPlaceholder = "XXXXXXXX"

// deploymentID is the deployment id, a CloudFormation expression.
func (s *Stack) deploymentID() string {
	if s.depID == "" {
		uuid := awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), awscdk.Aws_STACK_ID(), nil))
		s.depID = *awscdk.Fn_Select(jsii.Number(0), awscdk.Fn_Split(jsii.String("-"), uuid, nil))
	}
	return s.depID
}

// The names, from the prefix and a deployment id.
func queueName(prefix, id, queue string) string { return prefix + "-" + id + "-" + queue + ".fifo" }
func logGroupName(prefix, id, name string) string {
	return "/" + prefix + "/" + id + "/" + name
}
func scheduleGroupName(prefix string) string { return prefix }
func apiName(prefix string) string           { return prefix }
func taskFamily(prefix string) string        { return prefix + "-sandboxd" }
func topicDisplayName(prefix string) string  { return "cairn " + prefix + " alarms" }

// dashboardName: dashboards are global to the account (their ARN has no
// region), so the name carries the region: one stack per region may share
// a prefix. Not retained, so no deployment id.
func dashboardName(prefix, region string) string { return prefix + "-" + region }

// regionPlaceholder stands for the region where a name is measured before
// deployment: longer than any region's name.
const regionPlaceholder = "xx-xxxxxxxxxxxxxxx-9"

// Log groups that are not a function's.
const (
	logSandbox   = "sandboxd"
	logAPIAccess = "api-access"
)

// PrefixPattern: a CloudFormation stack name (main.go names the stack after
// the prefix) — letters, digits and hyphens, starting with a letter — which
// also satisfies every other name the prefix starts.
var PrefixPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)

// nameLimit is one kind of name the prefix is part of, with its limit.
type nameLimit struct {
	what  string
	max   int
	names []string // every such name the stack sets, deployment id as the placeholder
}

// nameLimits lists every name that contains the prefix.
func nameLimits(p Props) []nameLimit {
	id := deploymentIDPlaceholder
	var queues, logs []string
	for _, q := range Queues {
		queues = append(queues, queueName(p.Prefix, id, q), queueName(p.Prefix, id, DLQ(q)))
	}
	for _, fn := range Functions {
		logs = append(logs, logGroupName(p.Prefix, id, fn))
	}
	logs = append(logs, logGroupName(p.Prefix, id, logAPIAccess))
	limits := []nameLimit{
		{"CloudFormation stack name", 128, []string{p.Prefix}},
		{"SQS queue name", 80, queues},
		{"CloudWatch Logs log group name", 512, logs},
		{"EventBridge Scheduler schedule group name", 64, []string{scheduleGroupName(p.Prefix)}},
		{"API Gateway API name", 128, []string{apiName(p.Prefix)}},
		{"CloudWatch dashboard name", 255, []string{dashboardName(p.Prefix, regionPlaceholder)}},
	}
	if p.Sandboxes == SandboxesFargate {
		limits = append(limits,
			nameLimit{"CloudWatch Logs log group name", 512, []string{logGroupName(p.Prefix, id, logSandbox)}},
			nameLimit{"ECS task definition family", 255, []string{taskFamily(p.Prefix)}})
	}
	if p.AlarmEmail != "" {
		limits = append(limits, nameLimit{"SNS topic display name", 100, []string{topicDisplayName(p.Prefix)}})
	}
	return limits
}

// checkPrefix refuses a prefix that would make any name invalid, naming
// the limit, the longest name it breaks and the longest prefix that fits.
func checkPrefix(p Props) error {
	if !PrefixPattern.MatchString(p.Prefix) {
		return fmt.Errorf("prefix %q: want letters, digits and hyphens, starting with a letter (%s; it names the CloudFormation stack)", p.Prefix, PrefixPattern)
	}
	for _, l := range nameLimits(p) {
		longest := ""
		for _, n := range l.names {
			if len(n) > len(longest) {
				longest = n
			}
		}
		if len(longest) > l.max {
			return fmt.Errorf("prefix %q (%d characters) is too long: the %s %q (%s = the %d-character deployment id) would have %d characters, the limit is %d; use a prefix of at most %d characters",
				p.Prefix, len(p.Prefix), l.what, longest, deploymentIDPlaceholder, DeploymentIDLength, len(longest), l.max, l.max-(len(longest)-len(p.Prefix)))
		}
	}
	return nil
}
