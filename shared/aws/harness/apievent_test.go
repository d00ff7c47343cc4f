package harness_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/aws/harness"
)

func TestAPIEvent(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		path        string
		header      http.Header
		body        []byte
		rawPath     string
		rawQuery    string
		query       map[string]string
		headers     map[string]string
		cookies     []string
		body64      bool
		wantBodyStr string
	}{
		{
			name: "post with query, headers and cookies", method: "post",
			path:    "/v1/sessions/s1/submissions?wait=true&tag=a&tag=b",
			header:  http.Header{"Content-Type": {"application/json"}, "X-Multi": {"1", "2"}, "Cookie": {"a=1; b=2"}},
			body:    []byte(`{"prompt":"hi"}`),
			rawPath: "/v1/sessions/s1/submissions", rawQuery: "wait=true&tag=a&tag=b",
			query: map[string]string{"wait": "true", "tag": "a,b"},
			headers: map[string]string{"content-type": "application/json", "x-multi": "1,2",
				"content-length": "15", "host": "localhost"},
			cookies: []string{"a=1", "b=2"}, wantBodyStr: `{"prompt":"hi"}`,
		},
		{
			name: "get without query or body", method: "GET", path: "/healthz",
			rawPath: "/healthz", headers: map[string]string{"host": "localhost"},
		},
		{
			name: "binary body", method: "PUT", path: "/blob", body: []byte{0xff, 0x00, 0xfe},
			rawPath: "/blob", headers: map[string]string{"content-length": "3", "host": "localhost"},
			body64: true, wantBodyStr: base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0xfe}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := harness.APIEvent(tc.method, tc.path, tc.header, tc.body)
			if ev.Version != "2.0" || ev.RouteKey != "$default" || ev.RequestContext.Stage != "$default" {
				t.Errorf("version/route/stage = %q %q %q", ev.Version, ev.RouteKey, ev.RequestContext.Stage)
			}
			if ev.RawPath != tc.rawPath || ev.RawQueryString != tc.rawQuery || ev.RequestContext.HTTP.Path != tc.rawPath {
				t.Errorf("rawPath %q rawQueryString %q http.path %q", ev.RawPath, ev.RawQueryString, ev.RequestContext.HTTP.Path)
			}
			if !reflect.DeepEqual(ev.QueryStringParameters, tc.query) {
				t.Errorf("queryStringParameters = %v, want %v", ev.QueryStringParameters, tc.query)
			}
			if !reflect.DeepEqual(ev.Headers, tc.headers) {
				t.Errorf("headers = %v, want %v", ev.Headers, tc.headers)
			}
			if !reflect.DeepEqual(ev.Cookies, tc.cookies) {
				t.Errorf("cookies = %v, want %v", ev.Cookies, tc.cookies)
			}
			if ev.IsBase64Encoded != tc.body64 || ev.Body != tc.wantBodyStr {
				t.Errorf("body %q base64 %v, want %q %v", ev.Body, ev.IsBase64Encoded, tc.wantBodyStr, tc.body64)
			}
			if ev.RequestContext.HTTP.Method != http.MethodPost && tc.method == "post" {
				t.Errorf("method %q not upper-cased", ev.RequestContext.HTTP.Method)
			}
			if ev.RequestContext.RequestID == "" || ev.RequestContext.TimeEpoch == 0 || ev.RequestContext.HTTP.SourceIP == "" {
				t.Errorf("requestContext incomplete: %+v", ev.RequestContext)
			}
			// Round trip through the wire shape Lambda delivers.
			raw, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			var back events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, ev) {
				t.Errorf("JSON round trip changed the event:\n%s", raw)
			}
		})
	}
}
