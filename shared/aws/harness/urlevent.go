package harness

import (
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// URLEvent builds the Lambda function URL event (payload format 2.0) for
// a request, as a URL with AuthType AWS_IAM delivers it once it has
// verified the SigV4 signature of callerARN ("" = no authorizer context, as
// with AuthType NONE): the same request shape APIEvent builds for API
// Gateway (raw path and query, lower-cased headers, cookies, the body as
// text or base64), with requestContext.authorizer.iam naming the caller —
// its ARN, account and, for an assumed role, the "ROLE-ID:SESSION" caller
// id.
func URLEvent(method, path string, header http.Header, body []byte, callerARN string) *events.LambdaFunctionURLRequest {
	api := APIEvent(method, path, header, body)
	rc := api.RequestContext
	ev := &events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: api.RawPath, RawQueryString: api.RawQueryString, Cookies: api.Cookies,
		Headers: api.Headers, QueryStringParameters: api.QueryStringParameters,
		Body: api.Body, IsBase64Encoded: api.IsBase64Encoded,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: rc.AccountID, RequestID: rc.RequestID, APIID: "local", DomainName: rc.DomainName,
			DomainPrefix: rc.DomainPrefix, Time: rc.Time, TimeEpoch: rc.TimeEpoch,
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: rc.HTTP.Method, Path: rc.HTTP.Path, Protocol: rc.HTTP.Protocol,
				SourceIP: rc.HTTP.SourceIP, UserAgent: rc.HTTP.UserAgent,
			},
		},
	}
	if callerARN != "" {
		iam := IAM(callerARN).IAM
		caller := "AIDALOCAL"
		if _, rest, ok := strings.Cut(callerARN, ":assumed-role/"); ok {
			_, session, _ := strings.Cut(rest, "/")
			caller = "AROALOCAL:" + session
		}
		ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
			IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
				AccessKey: "ASIALOCAL", AccountID: iam.AccountID, CallerID: caller, UserARN: callerARN, UserID: caller,
			},
		}
	}
	return ev
}
