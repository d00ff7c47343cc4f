// Command repair is the scheduled repair Lambda (every minute): re-drives
// stuck submissions, turns dead-lettered messages into FAILED and wakes
// stuck workflow runs.
//
// It may import shared/aws/backend, shared/aws/lambdafn, shared/repair, the
// standard library and aws-lambda-go.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/repair"
)

func main() {
	// Format and level follow the function's logging config (AWS_LAMBDA_LOG_FORMAT,
	// AWS_LAMBDA_LOG_LEVEL); lines logged with an invocation's ctx carry its requestId.
	log := lambdacontext.NewLogger()
	rt, err := backend.Boot(context.Background(), os.Getenv, log, backend.Serves{})
	if err != nil {
		log.Error("starting", "error", err)
		os.Exit(1)
	}
	// Invoked once a minute; a pass every repair.DefaultPassEvery within it.
	lambda.Start(lambdafn.Scheduled("repair", func(ctx context.Context) (repair.Report, error) { return rt.Repair.Passes(ctx, 0) }))
}
