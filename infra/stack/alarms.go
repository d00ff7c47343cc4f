package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"
)

// OldestMessageSeconds: a wake-up older than this means a phase is not
// keeping up, or is failing and being retried.
const OldestMessageSeconds = 900

// DLQArrivalsExpression is the DLQ alarm's metric math: the most of a
// minute's messages received from the DLQ (repair drains it: every
// dead-lettered message is received at least once), messages sent to it
// (a message sent there explicitly; SQS does not count the ones its
// redrive policy moves in NumberOfMessagesSent) and messages visible in it
// (repair not draining). Each FILL'd with 0, so a quiet minute is 0, not
// missing data.
const DLQArrivalsExpression = "MAX([FILL(received, 0), FILL(sent, 0), FILL(visible, 0)])"

// addAlarms: a message arriving in any DLQ, an old message on any main
// queue, an error in any function. With an alarm email, each alarm
// notifies an SNS topic subscribed to it.
//
// The DLQ alarm cannot rely on the DLQ's depth: repair drains the DLQs
// within the minute, between two samples of
// ApproximateNumberOfMessagesVisible, and SQS does not count messages its
// redrive moves in the DLQ's NumberOfMessagesSent. What every
// dead-lettered message does produce is a receive from the DLQ (repair's),
// counted exactly by NumberOfMessagesReceived — so the alarm is on
// DLQArrivalsExpression ≥ 1 over one minute.
func (s *Stack) addAlarms() {
	var action awscloudwatch.IAlarmAction
	if s.Props.AlarmEmail != "" {
		s.Topic = awssns.NewTopic(s.Stack, jsii.String("Alarms"), &awssns.TopicProps{DisplayName: jsii.String(topicDisplayName(s.Props.Prefix))})
		s.Topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(s.Props.AlarmEmail), nil))
		action = awscloudwatchactions.NewSnsAction(s.Topic)
	}
	alarm := func(id, desc string, m awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator) {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: op,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		if action != nil {
			a.AddAlarmAction(action)
			a.AddOkAction(action)
		}
		s.Alarms = append(s.Alarms, a) // the dashboard shows their states
	}
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	five := awscdk.Duration_Minutes(jsii.Number(5))
	above, atLeast := awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
	sum, most := jsii.String("Sum"), jsii.String("Maximum")
	for _, q := range Queues {
		id := title(q)
		dlq := s.Queues[DLQ(q)]
		arrivals := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(DLQArrivalsExpression),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"received": dlq.MetricNumberOfMessagesReceived(&awscloudwatch.MetricOptions{Period: minute, Statistic: sum}),
				"sent":     dlq.MetricNumberOfMessagesSent(&awscloudwatch.MetricOptions{Period: minute, Statistic: sum}),
				"visible":  dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute, Statistic: most}),
			},
			Label:  jsii.String(DLQ(q) + " arrivals"),
			Period: minute,
		})
		alarm(id+"DLQArrivals", "a "+q+" wake-up reached its DLQ (repair fails its submission poison:…, or it is not draining)",
			arrivals, 1, atLeast)
		alarm(id+"OldestMessage", "the "+q+" queue is not keeping up, or its consumer keeps failing",
			s.Queues[q].MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: minute, Statistic: most}), OldestMessageSeconds, above)
	}
	for _, fn := range Functions {
		alarm(title(fn)+"Errors", "the "+fn+" function failed (error, panic or timeout)",
			s.Functions[fn].MetricErrors(&awscloudwatch.MetricOptions{Period: five, Statistic: sum}), 0, above)
	}
}
