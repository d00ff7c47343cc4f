package harness

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Once receives one batch (without waiting) from fn's queue and, if it is
// not empty, invokes fn.Handler with it and deletes the records the
// response does not report as failed. It returns the batch size. Handler
// failures are not errors of Once: they leave records in flight, as on
// Lambda. An error means the queue could not be read or written.
func (h *Harness) Once(ctx context.Context, fn Function) (handled int, err error) {
	if err := fn.validate(); err != nil {
		return 0, err
	}
	arn, err := h.arn(ctx, fn.URL)
	if err != nil {
		return 0, err
	}
	batch := fn.BatchSize
	if batch == 0 {
		batch = DefaultBatchSize
	}
	hide := fn.Visibility
	if fn.ReceiveHold > 0 && fn.ReceiveHold < hide {
		hide = fn.ReceiveHold
	}
	out, err := h.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(fn.URL),
		MaxNumberOfMessages:         int32(batch),
		VisibilityTimeout:           seconds(hide),
		WaitTimeSeconds:             0,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return 0, fmt.Errorf("receiving from queue %s: %w", fn.Queue, err)
	}
	if len(out.Messages) == 0 {
		return 0, nil
	}
	ev := event(out.Messages, arn, h.Client.Options().Region)
	failed, err := h.invoke(ctx, fn, ev)
	if err != nil {
		h.log().WarnContext(ctx, "invocation failed; the whole batch will be redelivered",
			"queue", fn.Queue, "records", len(ev.Records), "error", err)
	}
	if ctx.Err() != nil {
		return len(out.Messages), nil // shutting down: nothing is acknowledged
	}
	var entries []types.DeleteMessageBatchRequestEntry
	for i, rec := range ev.Records {
		if err == nil && !failed[rec.MessageId] {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{
				Id: aws.String("r" + strconv.Itoa(i)), ReceiptHandle: aws.String(rec.ReceiptHandle),
			})
		}
	}
	if len(entries) == 0 {
		return len(out.Messages), nil
	}
	del, derr := h.Client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(fn.URL), Entries: entries})
	if derr != nil {
		return len(out.Messages), fmt.Errorf("deleting handled messages from queue %s: %w", fn.Queue, derr)
	}
	for _, f := range del.Failed {
		h.log().WarnContext(ctx, "deleting a handled message failed; it will be redelivered",
			"queue", fn.Queue, "entry", aws.ToString(f.Id), "code", aws.ToString(f.Code), "error", aws.ToString(f.Message))
	}
	return len(out.Messages), nil
}

// invoke calls fn.Handler with ev under the function timeout and returns
// the message ids it reported as failed. An error fails the whole batch:
// the handler returned one, panicked, ran past its timeout (Lambda would
// have stopped it; its goroutine is abandoned) or named a record that is
// not in the batch.
func (h *Harness) invoke(ctx context.Context, fn Function, ev events.SQSEvent) (map[string]bool, error) {
	h.invocations.Add(1)
	timeout := fn.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: requestID()})

	type result struct {
		resp events.SQSEventResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("handler panic: %v", r)}
			}
		}()
		resp, err := fn.Handler(ictx, ev)
		done <- result{resp, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ictx.Done():
	}
	if ictx.Err() != nil { // a response after the deadline never reaches Lambda
		if ctx.Err() != nil {
			return nil, fmt.Errorf("invocation abandoned: %w", ctx.Err())
		}
		return nil, fmt.Errorf("function timed out after %v", timeout)
	}
	if r.err != nil {
		return nil, fmt.Errorf("handler: %w", r.err)
	}
	in := make(map[string]bool, len(ev.Records))
	for _, rec := range ev.Records {
		in[rec.MessageId] = true
	}
	failed := map[string]bool{}
	for _, f := range r.resp.BatchItemFailures {
		if !in[f.ItemIdentifier] {
			return nil, fmt.Errorf("batch item failure names %q, not a record of the batch", f.ItemIdentifier)
		}
		failed[f.ItemIdentifier] = true
	}
	return failed, nil
}

// event builds the SQS event Lambda sends for msgs.
func event(msgs []types.Message, arn, region string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, m := range msgs {
		attrs := map[string]string{}
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		var mattrs map[string]events.SQSMessageAttribute
		if len(m.MessageAttributes) > 0 {
			mattrs = map[string]events.SQSMessageAttribute{}
			for k, v := range m.MessageAttributes {
				mattrs[k] = events.SQSMessageAttribute{
					StringValue: v.StringValue, BinaryValue: v.BinaryValue,
					StringListValues: v.StringListValues, BinaryListValues: v.BinaryListValues,
					DataType: aws.ToString(v.DataType),
				}
			}
		}
		ev.Records[i] = events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             attrs,
			MessageAttributes:      mattrs,
			EventSourceARN:         arn,
			EventSource:            "aws:sqs",
			AWSRegion:              region,
		}
	}
	return ev
}

// arn returns the queue's ARN (the records' eventSourceARN), cached.
func (h *Harness) arn(ctx context.Context, url string) (string, error) {
	h.arnMu.Lock()
	defer h.arnMu.Unlock()
	if a, ok := h.arns[url]; ok {
		return a, nil
	}
	out, err := h.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("reading the ARN of queue %s: %w", url, err)
	}
	a := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	if a == "" {
		return "", errors.New("queue " + url + " has no QueueArn attribute")
	}
	if h.arns == nil {
		h.arns = map[string]string{}
	}
	h.arns[url] = a
	return a, nil
}

// seconds converts d to whole seconds, rounding up, within 0…43200; 0
// leaves the queue's default visibility.
func seconds(d time.Duration) int32 {
	d = min(max(d, 0), 12*time.Hour)
	return int32((d + time.Second - 1) / time.Second)
}

// requestID is a Lambda-like request id (a random UUID-shaped string).
func requestID() string {
	t := strings.ToLower(rand.Text()) // 26 base32 characters
	return t[0:8] + "-" + t[8:12] + "-" + t[12:16] + "-" + t[16:20] + "-" + t[20:26]
}
