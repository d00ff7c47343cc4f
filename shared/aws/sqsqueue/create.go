package sqsqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/cairnrun/cairn/shared/contracts"
)

// dlqRetention keeps dead letters for the SQS maximum, 14 days.
const dlqRetention = "1209600"

// CreateQueues creates, idempotently, the FIFO queues
// <prefix>-<name>.fifo for the model, tools, commit and workflow queues, each with a
// dead-letter queue <prefix>-<name>-dlq.fifo that receives a message after
// maxReceives receives (RedrivePolicy). visibility is the queues' default
// visibility timeout. A queue that exists with other attributes is updated
// to these. It returns the queue name → URL map for Options.URLs, with keys
// "model", "model-dlq", "tools", ….
//
// SQS limits a queue name to 80 characters, so prefix may have at most 64.
func CreateQueues(ctx context.Context, client *sqs.Client, prefix string, maxReceives int, visibility time.Duration) (map[string]string, error) {
	urls := map[string]string{}
	for _, name := range []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit, contracts.QueueWorkflow} {
		url, dlqURL, err := createPair(ctx, client, prefix+"-"+name, maxReceives, visibility)
		if err != nil {
			return nil, err
		}
		urls[name], urls[contracts.DLQ(name)] = url, dlqURL
	}
	return urls, nil
}

// createPair creates <base>-dlq.fifo and <base>.fifo redriving to it.
func createPair(ctx context.Context, client *sqs.Client, base string, maxReceives int, visibility time.Duration) (url, dlqURL string, err error) {
	if maxReceives < 1 || len(base)+len("-dlq.fifo") > 80 {
		return "", "", fmt.Errorf("creating queues %s: maxReceives %d < 1 or name longer than 80 characters: %w", base, maxReceives, contracts.ErrInvalid)
	}
	vis := strconv.Itoa(int(seconds(visibility)))
	dlqURL, err = createFIFO(ctx, client, contracts.DLQ(base)+".fifo", map[string]string{
		string(types.QueueAttributeNameVisibilityTimeout):      vis,
		string(types.QueueAttributeNameMessageRetentionPeriod): dlqRetention,
	})
	if err != nil {
		return "", "", err
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(dlqURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", fmt.Errorf("reading the ARN of queue %s: %w", dlqURL, err)
	}
	redrive, err := json.Marshal(map[string]any{
		"deadLetterTargetArn": attrs.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     maxReceives,
	})
	if err != nil {
		return "", "", fmt.Errorf("creating queue %s: %w", base, err)
	}
	url, err = createFIFO(ctx, client, base+".fifo", map[string]string{
		string(types.QueueAttributeNameVisibilityTimeout): vis,
		string(types.QueueAttributeNameRedrivePolicy):     string(redrive),
	})
	if err != nil {
		return "", "", err
	}
	return url, dlqURL, nil
}

// createFIFO creates a FIFO queue with attrs, or brings an existing one to
// attrs.
func createFIFO(ctx context.Context, client *sqs.Client, name string, attrs map[string]string) (string, error) {
	create := maps.Clone(attrs)
	create[string(types.QueueAttributeNameFifoQueue)] = "true"
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: create})
	if err == nil {
		return aws.ToString(out.QueueUrl), nil
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) || (ae.ErrorCode() != "QueueAlreadyExists" && ae.ErrorCode() != "QueueNameExists") {
		return "", fmt.Errorf("creating queue %s: %w", name, err)
	}
	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("looking up existing queue %s: %w", name, err)
	}
	url := aws.ToString(got.QueueUrl)
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
		return "", fmt.Errorf("updating existing queue %s: %w", name, err)
	}
	return url, nil
}
