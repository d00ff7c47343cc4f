// Package aws is the home of cairn's AWS adapters. It holds no code; its
// sub-packages are what a Lambda function binary links besides the core
// (contracts, journal, turn, tools, workflow, …):
//
//	backend/   the AWS backend: configuration from the environment, SDK
//	           clients, the ports for assemble.New, provisioning on a local
//	           endpoint
//	dynamo/    journal, transcript, streams, events and workflows on one
//	           DynamoDB table
//	s3blob/    S3 claim checks for bodies too big for an item
//	sqsqueue/  the SQS FIFO queue adapter
//	lambdafn/  Lambda event adapters (SQS batches, API Gateway v2)
//	harness/   plays Lambda locally: polls SQS and invokes handlers
//	           (`cairn dev --backend aws`, tests)
//
// Nothing under shared/aws imports shared/embedded, so no function binary
// links SQLite (docs/docs_test.go checks it).
//
// It may import nothing.
package aws
