package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// cairn console forwards only its own browser's console requests, each
// signed (SigV4 for execute-api, or a bearer token), and nothing of the
// browser's own credentials.
func TestConsoleProxySignsWhatItsBrowserAsks(t *testing.T) {
	var got []*http.Request
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Clone(r.Context()))
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("console page"))
	}))
	defer api.Close()
	up, _ := url.Parse(api.URL + "/")
	p := &consoleProxy{api: up, host: "127.0.0.1:9999", key: "k3y", client: http.DefaultClient,
		creds:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		region: "eu-west-1", signer: v4.NewSigner()}
	call := func(method, path string, hdr ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://127.0.0.1:9999"+path, strings.NewReader("prompt=x"))
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
			}
			req.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		return rec
	}
	cookie := proxyCookie + "=k3y; cairn_console=browser-token"

	if rec := call("GET", "/console/", "Host", "rebound.example", "Cookie", cookie); rec.Code != http.StatusMisdirectedRequest {
		t.Fatalf("another Host: %d", rec.Code)
	}
	if rec := call("GET", "/console/"); rec.Code != http.StatusForbidden {
		t.Fatalf("no key cookie: %d", rec.Code)
	}
	if rec := call("GET", "/proxy/login?key=wrong"); rec.Code != http.StatusForbidden {
		t.Fatalf("a wrong key: %d", rec.Code)
	}
	rec := call("GET", "/proxy/login?key=k3y")
	if rec.Code != http.StatusSeeOther || !strings.Contains(rec.Header().Get("Set-Cookie"), proxyCookie+"=k3y") ||
		!strings.Contains(rec.Header().Get("Set-Cookie"), "SameSite=Strict") {
		t.Fatalf("the printed link: %d %v", rec.Code, rec.Header())
	}
	if rec := call("POST", "/console/sessions/s/submit", "Cookie", cookie, "Origin", "https://evil.example"); rec.Code != http.StatusForbidden {
		t.Fatalf("a cross-origin post: %d", rec.Code)
	}
	if rec := call("GET", "/v1/sessions", "Cookie", cookie); rec.Code != http.StatusNotFound {
		t.Fatalf("an API route: %d", rec.Code)
	}
	if len(got) != 0 {
		t.Fatalf("refused requests reached the API: %d", len(got))
	}

	rec = call("GET", "/console/sessions?q=a", "Cookie", cookie, "Accept", "text/html", "Authorization", "Bearer browser")
	if rec.Code != http.StatusOK || rec.Body.String() != "console page" || len(got) != 1 {
		t.Fatalf("forwarded: %d %q (%d calls)", rec.Code, rec.Body.String(), len(got))
	}
	r := got[0]
	if r.URL.Path != "/console/sessions" || r.URL.RawQuery != "q=a" || r.Header.Get("Cookie") != "" || r.Header.Get("Sec-Fetch-Site") != "same-origin" {
		t.Fatalf("the API got %s?%s cookie %q", r.URL.Path, r.URL.RawQuery, r.Header.Get("Cookie"))
	}
	if a := r.Header.Get("Authorization"); !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(a, "/eu-west-1/execute-api/aws4_request") {
		t.Fatalf("Authorization %q, want a SigV4 signature for execute-api", a)
	}

	p.token = "jwt-or-dev-token"
	call("POST", "/console/sessions/s/submit", "Cookie", cookie, "Origin", "http://127.0.0.1:9999", "Content-Type", "application/x-www-form-urlencoded")
	if r := got[len(got)-1]; r.Method != "POST" || r.Header.Get("Authorization") != "Bearer jwt-or-dev-token" {
		t.Fatalf("bearer mode: %s %q", r.Method, r.Header.Get("Authorization"))
	}
}

// The proxy forwards only what stays under /console/ — no dot segment
// the API would clean into one of its routes — keeps an id's escaped
// slash in its segment, and forwards nothing a page of another site made,
// same-site included: a page on another port of the loopback address gets
// the SameSite=Strict key cookie on its links and images.
func TestConsoleProxyForwardsOnlyTheConsole(t *testing.T) {
	var got []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.EscapedPath())
	}))
	defer api.Close()
	up, _ := url.Parse(api.URL)
	p := &consoleProxy{api: up, host: "127.0.0.1:9999", key: "k3y", client: http.DefaultClient, token: "t"}
	call := func(target, fetchSite string) int {
		req := httptest.NewRequest("GET", "http://127.0.0.1:9999/", nil)
		req.URL, _ = url.Parse(target)
		req.Header.Set("Cookie", proxyCookie+"=k3y")
		if fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", fetchSite)
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, target := range []string{"/console/../v1/sessions", "/console/%2E%2E/v1/sessions", "/console/./../v1/usage", "/console/sessions/x/.."} {
		if code := call(target, "same-origin"); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", target, code)
		}
	}
	for _, site := range []string{"same-site", "cross-site"} {
		if code := call("/console/", site); code != http.StatusForbidden {
			t.Errorf("a %s GET: %d, want 403", site, code)
		}
	}
	if len(got) != 0 {
		t.Fatalf("refused requests reached the API: %q", got)
	}
	if code := call("/console/sessions/a%2Fb", "none"); code != http.StatusOK || len(got) != 1 || got[0] != "/console/sessions/a%2Fb" {
		t.Fatalf("an escaped slash: %d, the API got %q", code, got)
	}
}
