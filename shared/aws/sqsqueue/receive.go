package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// SQS limits of ReceiveMessage.
const (
	maxBatch      = 10
	maxVisibility = 12 * time.Hour
)

// Receive returns up to limit (clamped to 1…10) visible messages and hides
// them for visibility, rounded up to whole seconds (at most 12 hours;
// visibility ≤ 0 means the queue's default, as the SDK omits a zero). It
// never blocks (WaitTimeSeconds 0): with nothing visible it returns an empty
// slice. SQS delivers a group's messages only in order and not while an
// earlier one of the group is in flight; it may return several messages of
// one group in one batch, in order.
func (q *Queue) Receive(ctx context.Context, queue string, limit int, visibility time.Duration) ([]contracts.Delivery, error) {
	url, err := q.url(queue)
	if err != nil {
		return nil, fmt.Errorf("receiving: %w", err)
	}
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         int32(min(maxBatch, max(limit, 1))),
		VisibilityTimeout:           seconds(visibility),
		WaitTimeSeconds:             0,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		return nil, fmt.Errorf("receiving from queue %s: %w", queue, err)
	}
	ds := make([]contracts.Delivery, 0, len(out.Messages))
	for _, sm := range out.Messages {
		var m contracts.Message
		if err := json.Unmarshal([]byte(aws.ToString(sm.Body)), &m); err != nil {
			// Poison: left in flight, it reaches the DLQ after
			// maxReceiveCount receives (see the package doc).
			continue
		}
		count, _ := strconv.Atoi(sm.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		ds = append(ds, contracts.Delivery{
			Message:      m,
			ID:           aws.ToString(sm.MessageId),
			Receipt:      aws.ToString(sm.ReceiptHandle),
			ReceiveCount: count,
		})
	}
	return ds, nil
}

// seconds converts d to whole seconds, rounding up, within SQS's
// visibility range 0…43200.
func seconds(d time.Duration) int32 {
	d = min(max(d, 0), maxVisibility)
	return int32((d + time.Second - 1) / time.Second)
}
