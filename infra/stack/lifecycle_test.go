package stack_test

import (
	"strings"
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// physicalName: the property that gives a resource of a type its physical
// name — the one a second creation of the stack would collide with. A type
// the stack retains must be listed, so that a new retained resource is a
// decision, not an accident.
var physicalName = map[string]string{
	"AWS::SQS::Queue":               "QueueName",
	"AWS::Logs::LogGroup":           "LogGroupName",
	"AWS::DynamoDB::Table":          "TableName",
	"AWS::S3::Bucket":               "BucketName",
	"AWS::SecretsManager::Secret":   "Name",
	"AWS::Lambda::Function":         "FunctionName",
	"AWS::IAM::Role":                "RoleName",
	"AWS::ECS::Cluster":             "ClusterName",
	"AWS::Scheduler::ScheduleGroup": "Name",
	"AWS::SNS::Topic":               "TopicName",
	"AWS::CloudWatch::Alarm":        "AlarmName",
	"AWS::EC2::SecurityGroup":       "GroupName",
}

// nameOf is a resource's physical name in two creations of the stack
// (fixed: the same in both); set is false when CloudFormation generates it.
func nameOf(t *testing.T, tp *tmpl, id string) (first, second string, set bool) {
	t.Helper()
	v, set := tp.props(id)[physicalName[tp.res[id].Type]]
	if !set {
		return "", "", false
	}
	first, ok1 := deployed(v, stackIDFirst)
	second, ok2 := deployed(v, stackIDSecond)
	if !ok1 || !ok2 {
		t.Errorf("%s %s: name %s is neither a string nor made of the deployment id", tp.name, id, js(v))
	}
	return first, second, true
}

// The deployment survives its own lifecycle: nothing the stack leaves
// behind (DeletionPolicy or UpdateReplacePolicy Retain) has a name the next
// creation of the stack would reuse — after a failed first deploy (rolled
// back, retained resources kept) or a destroy, `cdk deploy` creates the
// stack again, with a new stack id. Retained resources get generated names
// (table, bucket, secret) or names with the deployment id (log groups);
// every other fixed name belongs to a resource deleted with the stack.
func TestRedeployNotBlockedByRetainedNames(t *testing.T) {
	for _, tp := range all(t) {
		for id, r := range tp.res {
			retained := r.Deletion == "Retain" || r.Update == "Retain"
			if _, known := physicalName[r.Type]; !known {
				if retained {
					t.Errorf("%s %s (%s) is retained and this test does not know its name property: add it to physicalName", tp.name, id, r.Type)
				}
				continue
			}
			first, second, set := nameOf(t, tp, id)
			switch {
			case !set:
			case first != second:
				if !strings.Contains(first, "51af3dc0") || !strings.Contains(second, "9e2b07a0") {
					t.Errorf("%s %s: name %q / %q does not carry the deployment id", tp.name, id, first, second)
				}
			case retained:
				t.Errorf("%s %s (%s) is retained with the fixed name %q: a second creation of the stack would fail on it", tp.name, id, r.Type, first)
			case r.Deletion != "" && r.Deletion != "Delete":
				t.Errorf("%s %s: fixed name %q and DeletionPolicy %q", tp.name, id, first, r.Deletion)
			}
		}
	}
}

// What holds data or evidence is retained in prod — the journal, the claim
// checks, the logs — but under names a redeploy never reuses; the queues
// hold only wake-ups (the journal is the truth, repair re-drives it) and
// are deleted with the stack in every stage, under names with the
// deployment id, so a redeploy does not wait out the 60 s SQS keeps a
// deleted queue's name.
func TestDataRetainedQueuesDisposable(t *testing.T) {
	dev, prod, local := stacks(t)
	for _, id := range []string{prod.id(prod.s.Table), prod.id(prod.s.Bucket)} {
		if r := prod.res[id]; r.Deletion != "Retain" || r.Update != "Retain" {
			t.Errorf("prod %s: DeletionPolicy %q UpdateReplacePolicy %q, want Retain", id, r.Deletion, r.Update)
		}
		if _, _, set := nameOf(t, prod, id); set {
			t.Errorf("prod %s: a fixed name", id)
		}
	}
	for _, id := range prod.ofType("AWS::Logs::LogGroup") {
		first, second, set := nameOf(t, prod, id)
		if prod.res[id].Deletion != "Retain" || !set || first == second {
			t.Errorf("prod log group %s: DeletionPolicy %q, names %q / %q: want retained under a name per deployment", id, prod.res[id].Deletion, first, second)
		}
	}
	for _, tp := range []*tmpl{dev, prod, local} {
		for _, id := range tp.ofType("AWS::SQS::Queue") {
			first, second, _ := nameOf(t, tp, id)
			if r := tp.res[id]; r.Deletion != "Delete" || r.Update != "Delete" || first == second {
				t.Errorf("%s queue %s: DeletionPolicy %q UpdateReplacePolicy %q, names %q / %q", tp.name, id, r.Deletion, r.Update, first, second)
			}
		}
	}
	// The log groups are named /<prefix>/<deployment id>/<name>, and the
	// stack outputs the deployment id.
	if got, _ := deployed(prod.props(prod.id(prod.s.LogGroups[stack.FnModel]))["LogGroupName"], stackIDFirst); got != "/cairn-prod/51af3dc0/model" {
		t.Errorf("prod model log group deploys as %q", got)
	}
	outputs := obj((*prod.a.ToJSON())["Outputs"])
	if got, _ := deployed(obj(outputs["DeploymentId"])["Value"], stackIDFirst); got != "51af3dc0" {
		t.Errorf("prod output DeploymentId deploys as %q, want 51af3dc0", got)
	}
}
