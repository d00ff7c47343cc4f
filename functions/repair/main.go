// Command repair is the scheduled repair Lambda (every minute): re-drives
// stuck submissions, turns dead-lettered messages into FAILED and wakes
// stuck workflow runs.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairnrun/cairn/shared/aws/backend"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	rt, err := backend.Boot(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("starting", "error", err)
		os.Exit(1)
	}
	lambda.Start(rt.RepairAll)
}
