// Command api is the HTTP API Lambda: API Gateway HTTP API (v2) events in,
// served by the same http.Handler as `cairn dev`.
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
	lambda.Start(lambdafn.APIHandler(rt.API))
}
