package stack_test

import (
	"strings"
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

// mathAlarmsOn returns the metric-math alarms reading a resource's
// metrics, each with its metrics by id.
func (tp *tmpl) mathAlarmsOn(resourceID string) []map[string]any {
	var out []map[string]any
	for _, id := range tp.ofType("AWS::CloudWatch::Alarm") {
		p := tp.props(id)
		if p["Metrics"] != nil && refersTo(p["Metrics"], resourceID) {
			out = append(out, p)
		}
	}
	return out
}

// Every DLQ alarms on any message reaching it within a minute — also one
// that repair drains before the depth is sampled: the minute's receives
// from the DLQ (repair's drain), sends to it, and its depth, over one
// one-minute period, at ≥ 1. Not on depth alone, and not on
// NumberOfMessagesSent alone (SQS does not count redrive moves there).
func TestEveryDLQAlarmsOnArrivalsNotOnDepth(t *testing.T) {
	for _, tp := range all(t) {
		for _, q := range stack.Queues {
			dlq := tp.id(tp.s.Queues[stack.DLQ(q)])
			if as := tp.alarmsOn("ApproximateNumberOfMessagesVisible", dlq); len(as) != 0 {
				t.Errorf("%s %s: a depth-only alarm %s", tp.name, stack.DLQ(q), js(as))
			}
			as := tp.mathAlarmsOn(dlq)
			if len(as) != 1 {
				t.Errorf("%s %s: %d arrival alarms, want 1", tp.name, stack.DLQ(q), len(as))
				continue
			}
			a := as[0]
			if a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || num(a["Threshold"]) != 1 || num(a["EvaluationPeriods"]) != 1 {
				t.Errorf("%s %s: alarm %s %v %v periods, want ≥ 1 over 1", tp.name, stack.DLQ(q), a["ComparisonOperator"], a["Threshold"], a["EvaluationPeriods"])
			}
			want := map[string]string{ // metric → statistic
				"NumberOfMessagesReceived":           "Sum",
				"NumberOfMessagesSent":               "Sum",
				"ApproximateNumberOfMessagesVisible": "Maximum",
			}
			ids := map[string]string{} // metric → id
			var expr string
			for _, raw := range list(a["Metrics"]) {
				m := obj(raw)
				if e := str(m["Expression"]); e != "" {
					if m["ReturnData"] != true {
						t.Errorf("%s %s: the expression is not what the alarm evaluates", tp.name, stack.DLQ(q))
					}
					expr = e
					continue
				}
				st := obj(m["MetricStat"])
				metric := obj(st["Metric"])
				name := str(metric["MetricName"])
				if want[name] == "" || st["Stat"] != want[name] || num(st["Period"]) != 60 || metric["Namespace"] != "AWS/SQS" ||
					js(metric["Dimensions"]) != js([]any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{dlq, "QueueName"}}}}) {
					t.Errorf("%s %s: metric %s", tp.name, stack.DLQ(q), js(m))
				}
				ids[name] = str(m["Id"])
			}
			if len(ids) != len(want) {
				t.Errorf("%s %s: metrics %v, want %v", tp.name, stack.DLQ(q), ids, want)
			}
			// Missing data (a quiet minute) counts as 0 for each, and the
			// alarm takes the largest.
			if !strings.HasPrefix(expr, "MAX([") {
				t.Errorf("%s %s: expression %q, want the MAX of the three", tp.name, stack.DLQ(q), expr)
			}
			for name, id := range ids {
				if !strings.Contains(expr, "FILL("+id+", 0)") {
					t.Errorf("%s %s: expression %q does not read %s (%s) with missing data as 0", tp.name, stack.DLQ(q), expr, name, id)
				}
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
