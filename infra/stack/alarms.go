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

// addAlarms: a message in any DLQ, an old message on any main queue, an
// error in any function. With an alarm email, each alarm notifies an SNS
// topic subscribed to it.
func (s *Stack) addAlarms() {
	var action awscloudwatch.IAlarmAction
	if s.Props.AlarmEmail != "" {
		s.Topic = awssns.NewTopic(s.Stack, jsii.String("Alarms"), &awssns.TopicProps{DisplayName: jsii.String("cairn " + s.Props.Prefix + " alarms")})
		s.Topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(s.Props.AlarmEmail), nil))
		action = awscloudwatchactions.NewSnsAction(s.Topic)
	}
	alarm := func(id, desc string, m awscloudwatch.IMetric, threshold float64) {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		if action != nil {
			a.AddAlarmAction(action)
			a.AddOkAction(action)
		}
	}
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	five := awscdk.Duration_Minutes(jsii.Number(5))
	for _, q := range Queues {
		id := title(q)
		alarm(id+"DLQDepth", "a "+q+" wake-up was dead-lettered (repair fails its submission poison:…)",
			s.Queues[DLQ(q)].MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}), 0)
		alarm(id+"OldestMessage", "the "+q+" queue is not keeping up, or its consumer keeps failing",
			s.Queues[q].MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}), OldestMessageSeconds)
	}
	for _, fn := range Functions {
		alarm(title(fn)+"Errors", "the "+fn+" function failed (error, panic or timeout)",
			s.Functions[fn].MetricErrors(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), 0)
	}
}
