package sqsqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Delete acknowledges the message holding receipt (DeleteMessage). A
// receipt SQS rejects is ErrNotFound. SQS accepts a receipt of a message
// already deleted, and may accept (and honour) a stale one.
func (q *Queue) Delete(ctx context.Context, queue string, receipt string) error {
	url, err := q.url(queue)
	if err != nil {
		return fmt.Errorf("deleting a message: %w", err)
	}
	_, err = q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{
		QueueUrl:      aws.String(url),
		ReceiptHandle: aws.String(receipt),
	})
	if err != nil {
		return fmt.Errorf("deleting a message from queue %s: %w", queue, receiptError(err))
	}
	return nil
}

// Release makes the in-flight message holding receipt visible now
// (ChangeMessageVisibility 0), like a batch item failure. A receipt SQS
// rejects (message deleted, moved or no longer in flight) is ErrNotFound.
func (q *Queue) Release(ctx context.Context, queue string, receipt string) error {
	return q.SetVisibility(ctx, queue, receipt, 0)
}

// SetVisibility hides the in-flight message holding receipt for d from now
// (ChangeMessageVisibility; SQS takes whole seconds, at most 12 hours).
func (q *Queue) SetVisibility(ctx context.Context, queue string, receipt string, d time.Duration) error {
	url, err := q.url(queue)
	if err != nil {
		return fmt.Errorf("setting a message's visibility: %w", err)
	}
	secs := int32(min(max(d, 0), 12*time.Hour) / time.Second)
	_, err = q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(url),
		ReceiptHandle:     aws.String(receipt),
		VisibilityTimeout: secs,
	})
	if err != nil {
		return fmt.Errorf("setting a message's visibility on queue %s to %ds: %w", queue, secs, receiptError(err))
	}
	return nil
}
