package stack_test

import (
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// alarmsOn returns the alarms on a metric of a resource (by the dimension
// referring to it).
func (tp *tmpl) alarmsOn(metric, resourceID string) []map[string]any {
	var out []map[string]any
	for _, id := range tp.ofType("AWS::CloudWatch::Alarm") {
		p := tp.props(id)
		if p["MetricName"] == metric && refersTo(p["Dimensions"], resourceID) {
			out = append(out, p)
		}
	}
	return out
}

// Every DLQ has an alarm on any visible message (depth > 0).
func TestEveryDLQHasDepthAlarm(t *testing.T) {
	for _, tp := range all(t) {
		for _, q := range stack.Queues {
			as := tp.alarmsOn("ApproximateNumberOfMessagesVisible", tp.id(tp.s.Queues[stack.DLQ(q)]))
			if len(as) != 1 || as[0]["ComparisonOperator"] != "GreaterThanThreshold" || num(as[0]["Threshold"]) != 0 || as[0]["Namespace"] != "AWS/SQS" {
				t.Errorf("%s %s: depth alarms %s", tp.name, stack.DLQ(q), js(as))
			}
		}
	}
}

// Every main queue has an alarm on the age of its oldest message.
func TestEveryQueueHasOldestMessageAlarm(t *testing.T) {
	for _, tp := range all(t) {
		for _, q := range stack.Queues {
			as := tp.alarmsOn("ApproximateAgeOfOldestMessage", tp.id(tp.s.Queues[q]))
			if len(as) != 1 || as[0]["ComparisonOperator"] != "GreaterThanThreshold" || num(as[0]["Threshold"]) <= 0 {
				t.Errorf("%s %s: age alarms %s", tp.name, q, js(as))
			}
		}
	}
}

// Every function has an alarm on its errors.
func TestEveryFunctionHasErrorAlarm(t *testing.T) {
	for _, tp := range all(t) {
		for _, fn := range stack.Functions {
			as := tp.alarmsOn("Errors", tp.id(tp.s.Functions[fn]))
			if len(as) != 1 || as[0]["Namespace"] != "AWS/Lambda" || num(as[0]["Threshold"]) != 0 || as[0]["ComparisonOperator"] != "GreaterThanThreshold" {
				t.Errorf("%s %s: error alarms %s", tp.name, fn, js(as))
			}
		}
	}
}

// With an alarm email every alarm notifies one SNS topic with that email
// subscribed; without, there is no topic.
func TestAlarmsNotifyTopicWhenEmailGiven(t *testing.T) {
	dev, prod, _ := stacks(t)
	if ids := dev.ofType("AWS::SNS::Topic"); len(ids) != 0 {
		t.Errorf("dev: topics %v without an alarm email", ids)
	}
	topics := prod.ofType("AWS::SNS::Topic")
	if len(topics) != 1 {
		t.Fatalf("prod: topics %v", topics)
	}
	var subscribed bool
	for _, id := range prod.ofType("AWS::SNS::Subscription") {
		p := prod.props(id)
		subscribed = subscribed || (p["Protocol"] == "email" && p["Endpoint"] == alarmEmail && js(p["TopicArn"]) == ref(topics[0]))
	}
	if !subscribed {
		t.Errorf("prod: %s is not subscribed to %s", alarmEmail, topics[0])
	}
	alarms := prod.ofType("AWS::CloudWatch::Alarm")
	if len(alarms) != 2*len(stack.Queues)+len(stack.Functions) {
		t.Errorf("prod: %d alarms", len(alarms))
	}
	for _, id := range alarms {
		if a := prod.props(id)["AlarmActions"]; js(a) != "["+ref(topics[0])+"]" {
			t.Errorf("prod alarm %s: actions %s", id, js(a))
		}
	}
}
