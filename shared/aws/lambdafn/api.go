package lambdafn

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// APIHandler returns a Lambda handler that serves API Gateway HTTP API
// (payload format 2.0) requests with h: the same http.Handler `cairn dev`
// serves on loopback, through aws-lambda-go-api-proxy's v2 adapter. The
// request's context is the invocation's, carrying the caller the event's
// authorizer context names (Caller; Authenticate makes it the request's
// principal) — read from the request context API Gateway fills in, never
// from a header.
func APIHandler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	proxy := httpadapter.NewV2(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		name, err := CallerName(ev.RequestContext)
		ctx = telemetry.WithFunction(ctx, "api")
		ctx = contracts.WithBufferedResponse(ctx) // API Gateway delivers the response whole
		defer telemetry.Flush(ctx)                // the process may be frozen once this returns
		return proxy.ProxyWithContext(context.WithValue(ctx, callerKey{}, caller{name: name, err: err}), ev)
	}
}

// Scheduled wraps the handler of a function invoked on a schedule (repair):
// its records name function, and its spans and metrics are flushed before
// the invocation returns.
func Scheduled[T any](function string, run func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		ctx = telemetry.WithFunction(ctx, function)
		defer telemetry.Flush(ctx) // the process may be frozen once this returns
		return run(ctx)
	}
}
