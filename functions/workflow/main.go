// Command workflow is the workflow driver's Lambda: wake-ups and schedule
// firings from the workflow SQS FIFO queue; scripts are evaluated by the
// isolate function, never here.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	rt, err := backend.Boot(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("starting", "error", err)
		os.Exit(1)
	}
	lambda.Start(lambdafn.SQSHandler(rt.Handle, log))
}
