package lambdafn_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

func TestCallerName(t *testing.T) {
	iam := func(arn string) events.APIGatewayV2HTTPRequestContext {
		return events.APIGatewayV2HTTPRequestContext{Authorizer: harness.IAM(arn)}
	}
	for _, c := range []struct {
		name string
		rc   events.APIGatewayV2HTTPRequestContext
		want string // "" = refused
	}{
		{"assumed-role session", iam("arn:aws:sts::111122223333:assumed-role/Dev/alice"), "arn:aws:sts::111122223333:assumed-role/Dev/alice"},
		{"assumed-role written as iam", iam("arn:aws:iam::111122223333:assumed-role/Dev/alice"), "arn:aws:sts::111122223333:assumed-role/Dev/alice"},
		{"assumed-role with a region", iam("arn:aws:sts:us-east-1:111122223333:assumed-role/Dev/alice"), "arn:aws:sts::111122223333:assumed-role/Dev/alice"},
		{"another partition", iam("arn:aws-cn:sts::111122223333:assumed-role/Dev/alice"), "arn:aws-cn:sts::111122223333:assumed-role/Dev/alice"},
		{"IAM user", iam("arn:aws:iam::111122223333:user/bob"), "arn:aws:iam::111122223333:user/bob"},
		{"IAM role", iam("arn:aws:iam::111122223333:role/path/Ops"), "arn:aws:iam::111122223333:role/path/Ops"},
		{"root", iam("arn:aws:iam::111122223333:root"), "arn:aws:iam::111122223333:root"},
		{"assumed-role without a session", iam("arn:aws:sts::111122223333:assumed-role/Dev"), ""},
		{"session with a slash", iam("arn:aws:sts::111122223333:assumed-role/Dev/a/b"), ""},
		{"not IAM", iam("arn:aws:s3:::bucket"), ""},
		{"no account", iam("arn:aws:iam:::user/bob"), ""},
		{"not an ARN", iam("bob"), ""},
		{"empty ARN", iam(""), ""},
		{"JWT", events.APIGatewayV2HTTPRequestContext{Authorizer: harness.JWT("https://idp/", "u-1")}, "https://idp/|u-1"},
		{"JWT without sub", events.APIGatewayV2HTTPRequestContext{Authorizer: harness.JWT("https://idp/", "")}, ""},
		{"JWT without iss", events.APIGatewayV2HTTPRequestContext{Authorizer: harness.JWT("", "u-1")}, ""},
		{"no authorizer", events.APIGatewayV2HTTPRequestContext{}, ""},
		{"a Lambda authorizer", events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			Lambda: map[string]any{"principal": "alice"}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := lambdafn.CallerName(c.rc)
			if c.want == "" {
				if err == nil || !errors.Is(err, contracts.ErrPermission) {
					t.Fatalf("CallerName = %q, %v; want ErrPermission", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("CallerName = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestOperators(t *testing.T) {
	ops, err := lambdafn.ParseOperators([]string{
		" arn:aws:iam::111122223333:role/team/Ops ",        // every session of Ops
		"arn:aws:sts::111122223333:assumed-role/Oncall",    // every session of Oncall
		"arn:aws:sts::111122223333:assumed-role/Dev/alice", // one session
		"arn:aws:iam::111122223333:user/bob",
		"https://idp/|root",
		"",
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"arn:aws:sts::111122223333:assumed-role/Ops/carol":    true,
		"arn:aws:sts::111122223333:assumed-role/Oncall/dave":  true,
		"arn:aws:iam::111122223333:role/other/path/Ops":       true, // the role itself, by any path
		"arn:aws:sts::111122223333:assumed-role/Dev/alice":    true,
		"arn:aws:sts::111122223333:assumed-role/Dev/mallory":  false,
		"arn:aws:iam::111122223333:user/bob":                  true,
		"https://idp/|root":                                   true,
		"arn:aws:sts::444455556666:assumed-role/Ops/carol":    false, // another account
		"arn:aws-cn:sts::111122223333:assumed-role/Ops/carol": false, // another partition
		"arn:aws:sts::111122223333:assumed-role/OpsX/carol":   false,
		"https://other/|root":                                 false,
		"":                                                    false,
	} {
		if got := ops.Has(name); got != want {
			t.Errorf("Has(%q) = %v, want %v", name, got, want)
		}
	}
	for _, bad := range []string{"arn:aws:s3:::bucket", "arn:aws:sts::111122223333:assumed-role/Dev/a/b", "arn:nope"} {
		if _, err := lambdafn.ParseOperators([]string{bad}); err == nil {
			t.Errorf("ParseOperators(%q) accepted it", bad)
		}
	}
}

// Authenticate reads only what APIHandler put in the request's context: a
// request that did not come through it has no principal, whatever its
// headers say.
func TestAuthenticateNeedsTheAuthorizerContext(t *testing.T) {
	auth := lambdafn.Authenticate(lambdafn.Operators{})
	r, _ := http.NewRequestWithContext(context.Background(), "GET", "http://x/v1/sessions", nil)
	r.Header.Set("X-Golambdaproxy-Apigatewaycontext", `{"authorizer":{"iam":{"userArn":"arn:aws:iam::111122223333:user/bob"}}}`)
	if p, err := auth(r); !errors.Is(err, contracts.ErrPermission) {
		t.Fatalf("Authenticate without APIHandler = %+v, %v; want ErrPermission", p, err)
	}
	var got contracts.Principal
	h := lambdafn.APIHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = auth(r)
		w.WriteHeader(http.StatusNoContent)
	}))
	if _, err := h(context.Background(), harness.APIEvent("GET", "/", nil, nil, harness.IAM("arn:aws:iam::111122223333:user/bob"))); err != nil {
		t.Fatal(err)
	}
	if got != (contracts.Principal{Name: "arn:aws:iam::111122223333:user/bob"}) {
		t.Fatalf("through APIHandler: %+v", got)
	}
}
