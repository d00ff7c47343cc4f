package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// MaxReceiveCount is how often a wake-up is delivered before it moves to
// the dead-letter queue (where repair turns it into FAILED poison:…).
const MaxReceiveCount = 5

// VisibilityFactor: a queue's visibility timeout is this many times its
// consumer's timeout, as AWS recommends for Lambda event sources, so a
// message is never visible again while a batch holding it may still run.
const VisibilityFactor = 6

// addQueues creates one FIFO queue per phase and for workflows, each with
// a FIFO dead-letter queue. Deduplication ids come from the runtime
// (submission/step/phase/version), so content-based deduplication is off —
// except on the workflow queue: EventBridge Scheduler's SQS target cannot
// set a deduplication id, and a FIFO queue refuses a message without one
// unless content-based deduplication is on (the runtime's explicit ids
// still take precedence there).
//
// The queues are deleted with the stack in every stage: a message is only
// a wake-up, and repair re-drives whatever the journal says is unfinished.
// Their names carry the deployment id (naming.go), so a redeploy never
// waits out SQS's 60 seconds before a deleted queue's name is free.
func (s *Stack) addQueues() {
	id := s.deploymentID()
	for _, q := range Queues {
		dlq := awssqs.NewQueue(s.Stack, jsii.String(title(q)+"DLQ"), &awssqs.QueueProps{
			QueueName:                 jsii.String(queueName(s.Props.Prefix, id, DLQ(q))),
			Fifo:                      jsii.Bool(true),
			ContentBasedDeduplication: jsii.Bool(false),
			Encryption:                awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:                jsii.Bool(true),
			RetentionPeriod:           awscdk.Duration_Days(jsii.Number(14)),
			RemovalPolicy:             awscdk.RemovalPolicy_DESTROY,
		})
		consumer := consumerOf(q)
		main := awssqs.NewQueue(s.Stack, jsii.String(title(q)+"Queue"), &awssqs.QueueProps{
			QueueName:                 jsii.String(queueName(s.Props.Prefix, id, q)),
			Fifo:                      jsii.Bool(true),
			ContentBasedDeduplication: jsii.Bool(q == QueueWorkflow),
			Encryption:                awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:                jsii.Bool(true),
			VisibilityTimeout:         awscdk.Duration_Seconds(jsii.Number(float64(VisibilityFactor * specs[consumer].timeout))),
			RetentionPeriod:           awscdk.Duration_Days(jsii.Number(4)),
			DeadLetterQueue:           &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(MaxReceiveCount)},
			RemovalPolicy:             awscdk.RemovalPolicy_DESTROY,
		})
		s.Queues[q] = main
		s.Queues[DLQ(q)] = dlq
	}
}

// consumerOf names the function an SQS queue feeds.
func consumerOf(queue string) string {
	for _, name := range Functions {
		if specs[name].queue == queue {
			return name
		}
	}
	panic("no consumer for queue " + queue)
}

// title: "model" → "Model" (construct ids).
func title(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
