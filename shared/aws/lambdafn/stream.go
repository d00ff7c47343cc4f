package lambdafn

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// StreamHandler returns the handler of a Lambda function URL with
// InvokeMode RESPONSE_STREAM and AuthType AWS_IAM that serves h (the event
// streams, api.NewStreams) through aws-lambda-go's lambdaurl: the response
// reaches the client as it is written, unlike APIHandler's, so the request
// is not marked buffered and the event streams stream. The request's
// context is the invocation's (its deadline the function's timeout),
// carrying the caller the URL's IAM authorizer context names (URLCallerName,
// the same name APIHandler gives that caller; Authenticate makes it the
// principal) — never read from a header — and the function's name for
// telemetry. Spans and metrics are flushed before the response ends.
//
// lambdaurl's ResponseWriter has no Flush: it is unbuffered, each Write
// passing through an io.Pipe to the runtime client, which sends it as one
// chunk of the response it streams to the Runtime API (net/http flushes a
// chunked request body after each chunk). The writer h gets says so with a
// Flush that has nothing left to do.
func StreamHandler(function string, h http.Handler) func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
	return lambdaurl.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := telemetry.WithFunction(r.Context(), function)
		defer telemetry.Flush(ctx) // before the body ends: the process may be frozen once it has
		c := caller{err: errNoURLEvent}
		if ev, ok := lambdaurl.RequestFromContext(ctx); ok {
			c.name, c.err = URLCallerName(ev.RequestContext)
		}
		h.ServeHTTP(unbuffered{w}, r.WithContext(context.WithValue(ctx, callerKey{}, c)))
	}))
}

var errNoURLEvent = fmt.Errorf("the request carries no function URL event: %w", contracts.ErrPermission)

// unbuffered is lambdaurl's ResponseWriter, whose every Write is already
// on its way when it returns: Flush has nothing to do.
type unbuffered struct{ http.ResponseWriter }

// Flush: each Write was sent as it was made.
func (unbuffered) Flush() {}

// Unwrap lets http.ResponseController reach lambdaurl's writer.
func (u unbuffered) Unwrap() http.ResponseWriter { return u.ResponseWriter }
