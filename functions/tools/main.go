// Command tools is the tools-phase Lambda: SQS FIFO batches in, partial batch
// failures out, the same handler `cairn dev` runs.
//
// It may import shared/aws/backend, shared/aws/backend/mcptools, shared/aws/backend/sandboxes,
// shared/aws/lambdafn, shared/contracts, the standard library and
// aws-lambda-go.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/mcptools"
	"github.com/cairnrun/cairn/shared/aws/backend/sandboxes"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

func main() {
	// Format and level follow the function's logging config (AWS_LAMBDA_LOG_FORMAT,
	// AWS_LAMBDA_LOG_LEVEL); lines logged with an invocation's ctx carry its requestId.
	log := lambdacontext.NewLogger()
	rt, err := backend.Boot(context.Background(), os.Getenv, log, backend.Serves{Sandboxes: sandboxes.Fargate, MCP: mcptools.Connector})
	if err != nil {
		log.Error("starting", "error", err)
		os.Exit(1)
	}
	lambda.Start(lambdafn.SQSHandler(contracts.QueueTools, rt.Handle, log, lambdafn.WithVisibility(rt.Ports.Queue, lambdafn.Visibility{})))
}
