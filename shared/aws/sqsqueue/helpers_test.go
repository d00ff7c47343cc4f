package sqsqueue

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// client connects to the test endpoint (skips without one; fails under CI).
func client(t *testing.T) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(awstest.Config(t))
}

// pair creates base.fifo and base-dlq.fifo (deleted when the test ends)
// and returns a Queue knowing them as base and DLQ(base).
func pair(t *testing.T, c *sqs.Client, base string, maxReceives int) *Queue {
	t.Helper()
	url, dlq, err := createPair(awstest.Context(t), c, base, maxReceives, 30*time.Second)
	if err != nil {
		t.Fatalf("createPair(%s): %v", base, err)
	}
	t.Cleanup(func() { deleteQueues(c, url, dlq) })
	q, err := New(c, Options{URLs: map[string]string{base: url, contracts.DLQ(base): dlq}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return q
}

func deleteQueues(c *sqs.Client, urls ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, u := range urls {
		_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
	}
}

// lazyQueue creates its queue pair on first use: the conformance suite
// names its queue only after the harness is built.
type lazyQueue struct {
	t           *testing.T
	client      *sqs.Client
	maxReceives int

	once sync.Once
	q    *Queue
}

var _ contracts.Queue = (*lazyQueue)(nil)

func (l *lazyQueue) get(name string) *Queue {
	l.once.Do(func() {
		l.q = pair(l.t, l.client, strings.TrimSuffix(name, contracts.DLQ("")), l.maxReceives)
	})
	return l.q
}

func (l *lazyQueue) Send(ctx context.Context, queue string, m contracts.Message) error {
	return l.get(queue).Send(ctx, queue, m)
}

func (l *lazyQueue) Receive(ctx context.Context, queue string, max int, visibility time.Duration) ([]contracts.Delivery, error) {
	return l.get(queue).Receive(ctx, queue, max, visibility)
}

func (l *lazyQueue) Delete(ctx context.Context, queue string, receipt string) error {
	return l.get(queue).Delete(ctx, queue, receipt)
}

func (l *lazyQueue) Release(ctx context.Context, queue string, receipt string) error {
	return l.get(queue).Release(ctx, queue, receipt)
}

func message(session, sub string) contracts.Message {
	return contracts.Message{
		Kind: contracts.QueueModel, SessionID: session, SubmissionID: sub,
		Phase: contracts.PhaseModel, Version: 1,
	}
}
