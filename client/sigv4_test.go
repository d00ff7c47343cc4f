package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token"}

// verifySigV4 checks r's SigV4 signature as AWS would: it signs again,
// with the same signer and credentials, a request made of what r's
// Authorization header says was signed (its SignedHeaders, the hash of
// the body r carries, the X-Amz-Date), and compares the signatures. It
// returns the signature's scope: service and region.
func verifySigV4(r *http.Request, creds aws.Credentials) (service, region string, err error) {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", "", fmt.Errorf("not a SigV4 Authorization: %q", auth)
	}
	parts := map[string]string{}
	for _, p := range strings.Split(rest, ", ") {
		k, v, _ := strings.Cut(p, "=")
		parts[k] = v
	}
	scope := strings.Split(parts["Credential"], "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 || scope[0] != creds.AccessKeyID {
		return "", "", fmt.Errorf("credential %q", parts["Credential"])
	}
	region, service = scope[2], scope[3]
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "", "", fmt.Errorf("X-Amz-Date: %w", err)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return "", "", err
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	again.Host = r.Host
	for _, h := range strings.Split(parts["SignedHeaders"], ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	again.Header.Del("X-Amz-Date")
	again.Header.Del("X-Amz-Security-Token")
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), service, region, at); err != nil {
		return "", "", err
	}
	if again.Header.Get("Authorization") != auth {
		return "", "", errors.New("the signature does not match the request")
	}
	if r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		return "", "", errors.New("no session token")
	}
	return service, region, nil
}

// A signed client's requests verify — with a body (its hash), a query, an
// idempotency key, on the base URL for execute-api and on the stream URL
// (a Lambda function URL) for lambda — and one changed after signing does
// not.
func TestSigV4(t *testing.T) {
	var mu sync.Mutex
	var scopes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		service, region, err := verifySigV4(r, testCreds)
		if err != nil {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":{"code":"forbidden","message":%q}}`, err.Error())
			return
		}
		if r.Header.Get("Authorization") == "" || strings.HasPrefix(r.Header.Get("Authorization"), "Bearer") {
			t.Errorf("a bearer token was sent")
		}
		mu.Lock()
		scopes = append(scopes, r.Method+" "+r.URL.Path+" "+service+" "+region)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/events") {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: 1\nevent: committed\ndata: {\"seq\":1,\"type\":\"committed\"}\n\nevent: end\ndata: {\"phase\":\"COMMITTED\"}\n\n")
			return
		}
		fmt.Fprint(w, `{"id":"sub_1","phase":"ACCEPTED"}`)
	}))
	defer srv.Close()
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return testCreds, nil })
	c, err := client.New(srv.URL+"/prod", client.WithSigV4(creds, "eu-west-1"), client.WithBearer("not-sent"),
		client.WithStreamURL(srv.URL+"/stream"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Submit(ctx, "ses 1", "a prompt, ünïcode", client.SubmitOptions{Key: "k 1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sessions(ctx, client.ListOptions{Limit: 3, Cursor: "a b/c"}); err == nil || !strings.Contains(err.Error(), "decoding sessions") {
		t.Fatalf("a signed GET with a query: %v", err) // verified; the canned answer is no list
	}
	end, err := c.Follow(ctx, "ses_1", "sub_1", client.FollowOptions{SSE: true}, func(contracts.Event) error { return nil })
	if err != nil || end.Phase != contracts.PhaseCommitted {
		t.Fatalf("a signed SSE follow: %+v %v", end, err)
	}
	want := []string{
		"POST /prod/v1/sessions/ses 1/submissions execute-api eu-west-1",
		"GET /prod/v1/sessions execute-api eu-west-1",
		"GET /stream/v1/sessions/ses_1/submissions/sub_1/events lambda eu-west-1",
	}
	if strings.Join(scopes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("verified requests:\n%s\nwant:\n%s", strings.Join(scopes, "\n"), strings.Join(want, "\n"))
	}

	// The body changed on the way: the signature no longer matches.
	tamper := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r.Body = io.NopCloser(strings.NewReader(`{"prompt":"something else"}`))
		r.ContentLength = int64(len(`{"prompt":"something else"}`))
		return http.DefaultTransport.RoundTrip(r)
	})}
	bad, _ := client.New(srv.URL, client.WithSigV4(creds, "eu-west-1"), client.WithHTTPClient(tamper))
	var ae *client.Error
	if _, err := bad.Submit(ctx, "ses_1", "a prompt", client.SubmitOptions{}); !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Fatalf("a body changed after signing: %v, want the verifier's 403", err)
	}
	// Other credentials do not verify either.
	other := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: testCreds.AccessKeyID, SecretAccessKey: "another", SessionToken: "session-token"}, nil
	})
	wrong, _ := client.New(srv.URL, client.WithSigV4(other, "eu-west-1"))
	if _, err := wrong.Submission(ctx, "ses_1", "sub_1"); !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Fatalf("another secret: %v, want 403", err)
	}
	if _, err := client.New(srv.URL, client.WithSigV4(creds, "")); err == nil {
		t.Fatal("WithSigV4 without a region was accepted")
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
