package lambdafn_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/testkit/ownertest"
)

type authz = *events.APIGatewayV2HTTPRequestContextAuthorizerDescription

// Every route through the API Gateway event path: the api handler behind
// lambdafn.APIHandler, fed harness.APIEvent events whose authorizer
// context names the caller — IAM callers for one set of principals, JWT
// subjects for another — and operators configured as CAIRN_OPERATORS
// would configure them.
func TestEveryRouteChecksItsOwnerBehindAPIGateway(t *testing.T) {
	for _, c := range []struct {
		name      string
		operators []string
		callers   map[ownertest.Caller]authz
		names     map[ownertest.Caller]string
	}{
		{
			name: "IAM",
			// The operator role by its IAM ARN (with a path): every session
			// of the role is an operator.
			operators: []string{"arn:aws:iam::111122223333:role/team/Ops"},
			callers: map[ownertest.Caller]authz{
				ownertest.A:        harness.IAM("arn:aws:sts::111122223333:assumed-role/Dev/alice"),
				ownertest.B:        harness.IAM("arn:aws:iam::111122223333:user/bob"),
				ownertest.Operator: harness.IAM("arn:aws:sts::111122223333:assumed-role/Ops/carol"),
			},
			names: map[ownertest.Caller]string{
				ownertest.A:        "arn:aws:sts::111122223333:assumed-role/Dev/alice",
				ownertest.B:        "arn:aws:iam::111122223333:user/bob",
				ownertest.Operator: "arn:aws:sts::111122223333:assumed-role/Ops/carol",
			},
		},
		{
			name:      "JWT",
			operators: []string{"https://idp.example.com/|root"},
			callers: map[ownertest.Caller]authz{
				ownertest.A:        harness.JWT("https://idp.example.com/", "alice"),
				ownertest.B:        harness.JWT("https://other-idp.example.com/", "alice"), // the same subject of another issuer is another principal
				ownertest.Operator: harness.JWT("https://idp.example.com/", "root"),
			},
			names: map[ownertest.Caller]string{
				ownertest.A:        "https://idp.example.com/|alice",
				ownertest.B:        "https://other-idp.example.com/|alice",
				ownertest.Operator: "https://idp.example.com/|root",
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			ops, err := lambdafn.ParseOperators(c.operators)
			if err != nil {
				t.Fatal(err)
			}
			h := enginetest.NewConfig(t, assemble.Config{Authenticate: lambdafn.Authenticate(ops)}, enginetest.Workflows(&enginetest.InProcess{}, nil))
			fn := lambdafn.APIHandler(h.RT.API)
			ownertest.Run(t, ownertest.Target{
				H:    h,
				Name: func(who ownertest.Caller) string { return c.names[who] },
				Do: func(t *testing.T, who ownertest.Caller, method, path string, body []byte) (int, []byte) {
					t.Helper()
					// Headers a caller could forge name someone else; only
					// the authorizer context counts.
					hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "X-Amzn-Oidc-Identity": {"operator"},
						"X-Golambdaproxy-Apigatewaycontext": {`{"authorizer":{"iam":{"userArn":"arn:aws:iam::111122223333:role/team/Ops"}}}`}}
					var a []authz
					if az := c.callers[who]; az != nil {
						a = append(a, az)
					}
					resp, err := fn(context.Background(), harness.APIEvent(method, path, hdr, body, a...))
					if err != nil {
						t.Fatal(err)
					}
					return resp.StatusCode, []byte(resp.Body)
				},
			})
		})
	}
}
