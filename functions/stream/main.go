// Command stream is the event-stream Lambda: a function URL (AuthType
// AWS_IAM, InvokeMode RESPONSE_STREAM) serving a turn's and a session's
// events as server-sent events, which API Gateway cannot (it buffers
// responses; the api function long-polls instead). It reads the journal
// and the event log and nothing else: shared/aws/backend/streams builds
// no runtime.
//
// It may import shared/aws/backend/streams, shared/aws/lambdafn, the
// standard library and aws-lambda-go.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cairnrun/cairn/shared/aws/backend/streams"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
)

func main() {
	// Format and level follow the function's logging config (AWS_LAMBDA_LOG_FORMAT,
	// AWS_LAMBDA_LOG_LEVEL); lines logged with an invocation's ctx carry its requestId.
	log := lambdacontext.NewLogger()
	h, err := streams.Boot(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("starting", "error", err)
		os.Exit(1)
	}
	lambda.StartHandlerFunc(lambdafn.StreamHandler("stream", h)) // as lambdaurl.Start, with the caller and telemetry added
}
