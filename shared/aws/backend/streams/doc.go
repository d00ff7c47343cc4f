// Package streams is the stream function's backend: the event streams of
// the API (api.NewStreams: a turn's and a session's, as server-sent events)
// over the DynamoDB journal and event log and the S3 claim checks, for a
// Lambda function URL whose responses stream (lambdafn.StreamHandler),
// where API Gateway buffers them. It reads and writes nothing else: it
// does not assemble the runtime, so the stream function links no queue
// client, scheduler, script interpreter, model SDK, sandbox client,
// isolate invoker or MCP SDK (docs/deps_test.go), and its role may only
// read (infra/stack). Callers are principals as on the api function: the
// IAM caller (lambdafn.Authenticate), with the same operators
// (CAIRN_OPERATORS).
//
// It reads the backend's variables (CAIRN_TABLE, CAIRN_BUCKET,
// CAIRN_OPERATORS, AWS_REGION, AWS_ENDPOINT_URL) without importing
// shared/aws/backend, which would link all of the runtime; a test checks
// the names agree.
//
// It may import shared/api, shared/aws/awsconfig, shared/aws/dynamo, shared/aws/lambdafn,
// shared/aws/s3blob, shared/contracts, shared/dumpable, shared/telemetry,
// the standard library and the AWS SDK.
//
// # Usage
//
//	// functions/stream/main.go
//	h, err := streams.Boot(ctx, os.Getenv, log)
//	lambda.Start(lambdafn.StreamHandler("stream", h))
package streams
