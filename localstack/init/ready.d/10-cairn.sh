#!/usr/bin/env bash
# LocalStack init hook: creates cairn's table, bucket and queues with the
# names `cairn dev --backend aws` and the harness use by default. Mirrors
# dynamo.CreateTable/EnableTTL, s3blob.CreateBucket and
# sqsqueue.CreateQueues (which also run idempotently at startup, so this
# hook and the Go code cannot drift far: a table without the indexes is
# refused by dynamo.CreateTable with a clear error).
set -euo pipefail
TABLE=${CAIRN_TABLE:-cairn} BUCKET=${CAIRN_BUCKET:-cairn-blobs} PREFIX=${CAIRN_QUEUE_PREFIX:-cairn}
MAX_RECEIVES=${CAIRN_MAX_RECEIVES:-5} VISIBILITY=${CAIRN_VISIBILITY_SECONDS:-30}

awslocal dynamodb create-table --table-name "$TABLE" --billing-mode PAY_PER_REQUEST \
	--attribute-definitions AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
		AttributeName=gsi1pk,AttributeType=S AttributeName=gsi1sk,AttributeType=S AttributeName=lsk,AttributeType=S \
	--key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
	--global-secondary-indexes 'IndexName=gsi1,KeySchema=[{AttributeName=gsi1pk,KeyType=HASH},{AttributeName=gsi1sk,KeyType=RANGE}],Projection={ProjectionType=ALL}' \
	--local-secondary-indexes 'IndexName=lsi1,KeySchema=[{AttributeName=pk,KeyType=HASH},{AttributeName=lsk,KeyType=RANGE}],Projection={ProjectionType=ALL}' \
	>/dev/null 2>&1 || echo "table $TABLE exists"
awslocal dynamodb update-time-to-live --table-name "$TABLE" \
	--time-to-live-specification Enabled=true,AttributeName=ttl >/dev/null 2>&1 || true
awslocal s3 mb "s3://$BUCKET" >/dev/null 2>&1 || echo "bucket $BUCKET exists"

for q in model tools commit workflow; do
	dlq_url=$(awslocal sqs create-queue --queue-name "$PREFIX-$q-dlq.fifo" \
		--attributes FifoQueue=true,VisibilityTimeout="$VISIBILITY" --query QueueUrl --output text)
	dlq_arn=$(awslocal sqs get-queue-attributes --queue-url "$dlq_url" --attribute-names QueueArn --query Attributes.QueueArn --output text)
	awslocal sqs create-queue --queue-name "$PREFIX-$q.fifo" --attributes \
		"{\"FifoQueue\":\"true\",\"VisibilityTimeout\":\"$VISIBILITY\",\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"$dlq_arn\\\",\\\"maxReceiveCount\\\":\\\"$MAX_RECEIVES\\\"}\"}" >/dev/null
done
echo "cairn resources ready: table $TABLE, bucket $BUCKET, queues $PREFIX-{model,tools,commit,workflow}[-dlq].fifo"
