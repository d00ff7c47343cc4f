package lambdafn

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// APIHandler returns a Lambda handler that serves API Gateway HTTP API
// (payload format 2.0) requests with h: the same http.Handler `cairn dev`
// serves on loopback, through aws-lambda-go-api-proxy's v2 adapter. The
// request's context is the invocation's.
func APIHandler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return httpadapter.NewV2(h).ProxyWithContext
}
