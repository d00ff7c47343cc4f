// Package lambdafn adapts cairn's handlers to the Lambda event shapes: an
// SQS batch (with partial batch responses) for the phase functions, an
// API Gateway HTTP API (payload v2) request for the api function, and a
// Lambda function URL request with a streamed response for the stream
// function. It is where a handler's error becomes "retry this message",
// the one place retryable vs terminal is decided for queue work.
//
// SQSHandler is written for a FIFO event source mapping with
// ReportBatchItemFailures enabled: it handles records in order and, at the
// first failure, reports that record and every later one, so SQS redelivers
// the rest of the batch in order. A record whose body is not a
// contracts.Message is poison that no retry can fix: it is logged and
// acknowledged, never retried (retrying it would only block its message
// group until the DLQ takes it). Each phase function serves one queue:
// SQSHandler is given that queue's message kind and refuses any other kind,
// reporting it as a failure so it ends in the queue's DLQ rather than being
// handled by the wrong function.
//
// APIHandler reads who made a request from the event's authorizer context
// (CallerName: an IAM caller's ARN, an assumed-role session normalised to
// arn:…:sts::ACCOUNT:assumed-role/ROLE/SESSION, or a JWT's
// "ISSUER|SUBJECT") into the request's context, never from a header the
// caller could write; Authenticate turns it into the request's
// contracts.Principal, an operator when Operators (CAIRN_OPERATORS) names
// it or its role. No authorizer context is a 401.
//
// StreamHandler serves the event streams (api.NewStreams) from a function
// URL with AuthType AWS_IAM and InvokeMode RESPONSE_STREAM through
// aws-lambda-go's lambdaurl: the caller is the URL's IAM authorizer
// context, named exactly as API Gateway's IAM caller (URLCallerName), and
// the response is not marked buffered, so events reach the client as they
// are written.
//
// Log lines are written with the invocation's context, so the functions'
// logger, aws-lambda-go's lambdacontext.NewLogHandler, adds the request id
// to each.
//
// It may import shared/contracts, shared/telemetry (a flush before each
// invocation returns), the standard library, aws-lambda-go's event types
// and lambdaurl, and the API Gateway proxy adapter. Nothing it imports
// talks to AWS.
//
// # Usage
//
//	// functions/model/main.go, after building the runtime through the seam:
//	log := lambdacontext.NewLogger()
//	lambda.Start(lambdafn.SQSHandler(contracts.QueueModel, rt.Handle, log))
//
//	// functions/api/main.go:
//	lambda.Start(lambdafn.APIHandler(api.New(apiConfig)))
//
//	// functions/stream/main.go (a function URL, RESPONSE_STREAM):
//	lambda.Start(lambdafn.StreamHandler("stream", api.NewStreams(streamConfig)))
package lambdafn
