package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/aws/dynamo"
	"github.com/cairnrun/cairn/shared/aws/s3blob"
	"github.com/cairnrun/cairn/shared/aws/sqsqueue"
)

// Names of the resources a local deployment uses. The defaults match
// localstack/init/ready.d/10-cairn.sh.
type Names struct {
	Table       string        // default "cairn"
	Bucket      string        // default "cairn-blobs"
	QueuePrefix string        // default "cairn": queues cairn-model.fifo, cairn-model-dlq.fifo, …
	MaxReceives int           // before a message is dead-lettered; default 5
	Visibility  time.Duration // queue visibility timeout; default 30s (≥ 6× a phase's run time)
}

func (n Names) withDefaults() Names {
	if n.Table == "" {
		n.Table = "cairn"
	}
	if n.Bucket == "" {
		n.Bucket = "cairn-blobs"
	}
	if n.QueuePrefix == "" {
		n.QueuePrefix = "cairn"
	}
	if n.MaxReceives <= 0 {
		n.MaxReceives = 5
	}
	if n.Visibility <= 0 {
		n.Visibility = 30 * time.Second
	}
	return n
}

// Provision creates (idempotently) the table, bucket and queues on the
// endpoint of awsCfg — LocalStack or moto; on AWS the CDK app owns them —
// and returns the Config that points at them.
func Provision(ctx context.Context, awsCfg aws.Config, n Names) (Config, error) {
	n = n.withDefaults()
	ddb := dynamodb.NewFromConfig(awsCfg)
	if err := dynamo.CreateTable(ctx, ddb, n.Table); err != nil {
		return Config{}, fmt.Errorf("provisioning table %s: %w", n.Table, err)
	}
	if err := dynamo.EnableTTL(ctx, ddb, n.Table); err != nil {
		return Config{}, fmt.Errorf("provisioning table %s TTL: %w", n.Table, err)
	}
	if err := s3blob.CreateBucket(ctx, s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = true }), n.Bucket); err != nil {
		return Config{}, fmt.Errorf("provisioning bucket %s: %w", n.Bucket, err)
	}
	urls, err := sqsqueue.CreateQueues(ctx, sqs.NewFromConfig(awsCfg), n.QueuePrefix, n.MaxReceives, n.Visibility)
	if err != nil {
		return Config{}, fmt.Errorf("provisioning queues %s-*: %w", n.QueuePrefix, err)
	}
	cfg := awsCfg
	c := Config{Table: n.Table, Bucket: n.Bucket, QueueURLs: urls, AWS: &cfg, Region: awsCfg.Region}
	if awsCfg.BaseEndpoint != nil {
		c.Endpoint = *awsCfg.BaseEndpoint
	}
	return c, nil
}
