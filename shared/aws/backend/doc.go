// Package backend is the `aws` mode of the construction seam: DynamoDB
// (journal, transcript, streams, events, workflows), S3 (claim checks), SQS
// FIFO (the phase and workflow queues) and EventBridge Scheduler —
// assembled by assemble.New exactly like the embedded backend. It never
// imports the embedded adapters, so a Lambda binary does not link SQLite.
//
// The heavy parts are in sub-packages a function's main names in Serves,
// so each function links only what it serves (docs/deps_test.go):
// models (the model providers' SDKs: the model function), sandboxes
// (Fargate, ECS: the tools function), scripts (the isolate invoker: the
// workflow function); all is every one of them (cairn dev --backend aws,
// tests). Without one, this package still checks what sessions ask for as
// the serving function would (keys.Checks; the Fargate network rules) and
// refuses what only that function does.
//
// Configuration comes from the environment through FromEnv (only main
// reads the environment); AWS_ENDPOINT_URL points the same binaries at
// LocalStack or moto. Provision creates the table, bucket and queues on
// such a local endpoint (on AWS the CDK app owns them).
//
// A request's principal is who API Gateway's authorizer (IAM or JWT) says
// made it, as lambdafn.APIHandler puts it in the request's context
// (lambdafn.Authenticate); Config.Operators (CAIRN_OPERATORS) are the
// operators. There is no bearer token on AWS.
//
// It may import shared/api (the type of Serves.MCPServer), shared/assemble, shared/aws/awsconfig, shared/aws/awsmeter, shared/aws/dynamo, shared/aws/lambdafn, shared/aws/s3blob,
// shared/aws/sqsqueue, shared/contracts, shared/dumpable, shared/ids,
// shared/meter, shared/model/providers/keys, shared/sandbox/placement,
// shared/pricing, shared/secrets, shared/telemetry, shared/tools, shared/workflow (WakeKey), shared/workflow/schedule, the
// standard library and the AWS SDK.
//
// # Usage
//
//	cfg, err := backend.FromEnv(os.Getenv)
//	cfg.Serves = all.Serves // or what the process serves
//	rt, err := backend.New(ctx, cfg)
//	lambda.Start(lambdafn.SQSHandler(contracts.QueueModel, rt.Handle, log))
//
//	// what every function's main does: FromEnv, then New
//	rt, err := backend.Boot(ctx, os.Getenv, log, backend.Serves{Models: models.FromEnv})
package backend
