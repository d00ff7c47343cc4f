package harness

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// APIEvent builds the API Gateway HTTP API (payload format 2.0) event for
// a request, as the $default route of a $default stage delivers it:
// rawPath and rawQueryString split from path, queryStringParameters
// (repeated keys joined by commas), header names lower-cased with repeated
// values joined by commas, cookies moved from the Cookie header to the
// cookies field, requestContext.http filled in, and the body as text
// (isBase64Encoded false; a body that is not UTF-8 is base64-encoded, as
// API Gateway does for binary payloads). An authorizer (IAM or JWT) puts
// the caller in requestContext.authorizer as API Gateway does once it has
// authorized the request; without one the event names no caller.
func APIEvent(method, path string, header http.Header, body []byte, authorizer ...*events.APIGatewayV2HTTPRequestContextAuthorizerDescription) events.APIGatewayV2HTTPRequest {
	rawPath, rawQuery, _ := strings.Cut(path, "?")
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        rawPath,
		RawQueryString: rawQuery,
		Headers:        map[string]string{},
	}
	if q, err := url.ParseQuery(rawQuery); err == nil && len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	for k, vs := range header {
		name := strings.ToLower(k)
		if name == "cookie" {
			for _, v := range vs {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						ev.Cookies = append(ev.Cookies, c)
					}
				}
			}
			continue
		}
		ev.Headers[name] = strings.Join(vs, ",")
	}
	if len(body) > 0 {
		if _, ok := ev.Headers["content-length"]; !ok {
			ev.Headers["content-length"] = strconv.Itoa(len(body))
		}
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	if _, ok := ev.Headers["host"]; !ok {
		ev.Headers["host"] = "localhost"
	}
	now := time.Now().UTC()
	ev.RequestContext = events.APIGatewayV2HTTPRequestContext{
		RouteKey:     "$default",
		AccountID:    "000000000000",
		Stage:        "$default",
		RequestID:    requestID(),
		APIID:        "local",
		DomainName:   ev.Headers["host"],
		DomainPrefix: strings.Split(ev.Headers["host"], ".")[0],
		Time:         now.Format("02/Jan/2006:15:04:05 -0700"),
		TimeEpoch:    now.UnixMilli(),
		HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
			Method:    strings.ToUpper(method),
			Path:      rawPath,
			Protocol:  "HTTP/1.1",
			SourceIP:  "127.0.0.1",
			UserAgent: ev.Headers["user-agent"],
		},
	}
	for _, a := range authorizer {
		ev.RequestContext.Authorizer = a
	}
	return ev
}

// IAM is the authorizer context of a request signed (SigV4) by the IAM
// principal callerARN, e.g. "arn:aws:sts::123456789012:assumed-role/Dev/alice".
func IAM(callerARN string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	account := ""
	if p := strings.SplitN(callerARN, ":", 6); len(p) == 6 {
		account = p[4]
	}
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
		AccountID: account, UserARN: callerARN, CallerID: callerARN[strings.LastIndex(callerARN, "/")+1:],
	}}
}

// JWT is the authorizer context of a request whose bearer JWT a JWT
// authorizer accepted, with its iss and sub claims.
func JWT(issuer, subject string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
		Claims: map[string]string{"iss": issuer, "sub": subject},
	}}
}
