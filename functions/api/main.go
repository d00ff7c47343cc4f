// Command api is the HTTP API Lambda: API Gateway HTTP API (v2) events in,
// served by the same http.Handler as `cairn dev`.
//
// It may import shared/aws/backend, shared/aws/backend/mcptools, shared/aws/lambdafn, shared/console,
// the standard library and aws-lambda-go.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/mcptools"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/console"
)

func main() {
	// Format and level follow the function's logging config (AWS_LAMBDA_LOG_FORMAT,
	// AWS_LAMBDA_LOG_LEVEL); lines logged with an invocation's ctx carry its requestId.
	log := lambdacontext.NewLogger()
	rt, err := backend.Boot(context.Background(), os.Getenv, log, backend.Serves{MCP: mcptools.Connector, MCPServer: mcptools.Server, Console: console.Mount})
	if err != nil {
		log.Error("starting", "error", err)
		os.Exit(1)
	}
	lambda.Start(lambdafn.APIHandler(rt.API))
}
