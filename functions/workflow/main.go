// Command workflow is the workflow driver's Lambda: wake-ups and schedule
// firings from the workflow SQS FIFO queue; scripts are evaluated by the
// isolate function, never here.
//
// It may import shared/aws/backend, shared/aws/backend/scripts,
// shared/aws/lambdafn, shared/contracts, the standard library and
// aws-lambda-go.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/scripts"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

func main() {
	// Format and level follow the function's logging config (AWS_LAMBDA_LOG_FORMAT,
	// AWS_LAMBDA_LOG_LEVEL); lines logged with an invocation's ctx carry its requestId.
	log := lambdacontext.NewLogger()
	rt, err := backend.Boot(context.Background(), os.Getenv, log, backend.Serves{Evaluator: scripts.Evaluator})
	if err != nil {
		log.Error("starting", "error", err)
		os.Exit(1)
	}
	lambda.Start(lambdafn.SQSHandler(contracts.QueueWorkflow, rt.Handle, log, lambdafn.WithVisibility(rt.Ports.Queue, lambdafn.Visibility{}), backend.CoalesceWakeUps))
}
