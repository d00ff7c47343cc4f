// Package sqsqueue is the Amazon SQS FIFO adapter of contracts.Queue: one
// FIFO queue per phase (model, tools, commit) and one for workflow
// wake-ups, each with a FIFO dead-letter queue reached through the queue's
// RedrivePolicy.
//
// A message's MessageGroupId is its session id, so a session's wake-ups are
// processed one at a time and in order; its MessageDeduplicationId is
// Message.DedupID() (hashed when SQS would reject it). The body is the JSON
// of the message. Queue names (contracts.QueueModel, contracts.DLQ(…)) map to
// queue URLs through Options.URLs; CreateQueues makes such a set.
//
// What SQS itself fixes, and the embedded queue only imitates:
//   - the deduplication window is 5 minutes and cannot be configured;
//   - visibility timeouts have whole-second granularity (Receive rounds up)
//     and at most 12 hours;
//   - a receipt from an earlier receive may still delete the message ("the
//     request succeeds, but the message might not be deleted"), so callers
//     must not rely on a stale receipt being rejected;
//   - a message moved to the DLQ keeps counting receives: its first receive
//     from the DLQ reports ApproximateReceiveCount maxReceiveCount+1.
//
// Receipts that SQS rejects (malformed, expired, message gone or not in
// flight) surface as contracts.ErrNotFound, which an acknowledging caller may
// ignore. A body that does not decode as a contracts.Message is not returned
// by Receive; it stays in flight and reaches the DLQ after maxReceiveCount
// receives, where an operator can inspect it.
//
// It may import shared/contracts, the standard library and the AWS SDK. The
// embedded backend never imports it.
//
// # Usage
//
//	client := sqs.NewFromConfig(cfg)
//	urls, err := sqsqueue.CreateQueues(ctx, client, "cairn-dev", 5, 30*time.Second)
//	if err != nil {
//		return err
//	}
//	q, err := sqsqueue.New(client, sqsqueue.Options{URLs: urls})
//	if err != nil {
//		return err
//	}
//	err = q.Send(ctx, contracts.QueueModel, contracts.Message{Kind: contracts.QueueModel, SessionID: sid, …})
//	deliveries, err := q.Receive(ctx, contracts.QueueModel, 10, 30*time.Second)
package sqsqueue
