// Command model is the model-phase Lambda: SQS FIFO batches in, partial batch
// failures out, the same handler `cairn dev` runs.
//
// It may import shared/aws/backend, shared/aws/backend/models,
// shared/aws/lambdafn, shared/contracts, the standard library and
// aws-lambda-go.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/models"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

func main() {
	// Format and level follow the function's logging config (AWS_LAMBDA_LOG_FORMAT,
	// AWS_LAMBDA_LOG_LEVEL); lines logged with an invocation's ctx carry its requestId.
	log := lambdacontext.NewLogger()
	rt, err := backend.Boot(context.Background(), os.Getenv, log, backend.Serves{Models: models.FromEnv})
	if err != nil {
		log.Error("starting", "error", err)
		os.Exit(1)
	}
	lambda.Start(lambdafn.SQSHandler(contracts.QueueModel, rt.Handle, log, lambdafn.WithVisibility(rt.Ports.Queue, lambdafn.Visibility{})))
}
