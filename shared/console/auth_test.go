package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/cairnrun/cairn/shared/console"
)

// everyPage checks the hooks every page has: the skip link, the nav with
// its five sections, main, and times and copy buttons as promised.
func everyPage(t *testing.T, doc *html.Node) {
	t.Helper()
	one(t, doc, `a.skip[href="#main"]`)
	one(t, doc, "main#main")
	var links []string
	for _, a := range all(t, doc, "nav#nav a") {
		links = append(links, text(a))
	}
	if got := strings.Join(links, ","); got != "Sessions,Approvals,Workflows,Schedules,Usage" {
		t.Fatalf("nav links %s", got)
	}
	for _, tm := range all(t, doc, "time") {
		if _, err := time.Parse(time.RFC3339, attr(tm, "datetime")); err != nil {
			t.Fatalf("<time datetime=%q>: not RFC 3339", attr(tm, "datetime"))
		}
	}
	// Every control has a label (or an aria-label); no id is used twice.
	labels := map[string]bool{}
	for _, l := range all(t, doc, "label[for]") {
		labels[attr(l, "for")] = true
	}
	for _, sel := range []string{"input", "textarea", "select"} {
		for _, c := range all(t, doc, sel) {
			if typ := attr(c, "type"); typ == "hidden" || typ == "submit" {
				continue
			}
			if !labels[attr(c, "id")] && attr(c, "aria-label") == "" {
				t.Fatalf("a %s without a label: %v", sel, c.Attr)
			}
		}
	}
	seen := map[string]bool{}
	for _, n := range all(t, doc, "[id]") {
		if id := attr(n, "id"); seen[id] {
			t.Fatalf("id %q is used twice", id)
		} else {
			seen[id] = true
		}
	}
	for _, b := range all(t, doc, "button") {
		if text(b) == "" && attr(b, "aria-label") == "" {
			t.Fatalf("a button with no name: %v", b.Attr)
		}
	}
	for _, b := range all(t, doc, "button.copy") {
		if attr(b, "data-copy") == "" || attr(b, "type") != "button" {
			t.Fatalf("a copy button without data-copy or type=button: %v", b.Attr)
		}
	}
}

func cookieOf(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			return c
		}
	}
	return nil
}

func TestLoginSetsTheCookieAndRedirects(t *testing.T) {
	f := newFixture(t)
	form := f.ok(t, "", "/console/login")
	one(t, form, `form#login input#token[name=token][type=password]`)
	one(t, form, `form#login label[for=token]`)

	p := f.post(t, "", "/console/login", url.Values{"token": {f.tok["alice"]}, "next": {"/console/approvals"}})
	redirected(t, p, "/console/approvals")
	ck := cookieOf(p.resp)
	if ck == nil || ck.Value != f.tok["alice"] || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console/" {
		t.Fatalf("login cookie %+v, want the token, HttpOnly, SameSite=Strict, Path=/console/", ck)
	}
	// The cookie is the credential of the pages after it.
	if who := text(one(t, f.ok(t, "alice", "/console/"), "#principal")); who != "alice" {
		t.Fatalf("signed in as %q", who)
	}

	// The link cairn dev prints: signs in and drops the token from the address.
	p = f.get(t, "", "/console/login?token="+f.tok["bob"])
	if loc := redirected(t, p, "/console/"); strings.Contains(loc, "token") {
		t.Fatalf("the redirect keeps the token: %s", loc)
	}
	if ck := cookieOf(p.resp); ck == nil || ck.Value != f.tok["bob"] {
		t.Fatalf("login link cookie %+v", ck)
	}

	// A wrong token: the API's refusal on the form, no cookie.
	p = f.post(t, "", "/console/login", url.Values{"token": {"not-a-token"}})
	if p.status != http.StatusUnauthorized || cookieOf(p.resp) != nil || !strings.Contains(text(one(t, p.doc, "#error")), "unauthorized") {
		t.Fatalf("wrong token: %d %s", p.status, clip(p.body))
	}
	// A login link another site opened sets nothing.
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/console/login?token="+f.tok["bob"], nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := f.do(t, req); p.status != http.StatusForbidden || cookieOf(p.resp) != nil {
		t.Fatalf("cross-site login link: %d, cookie %v", p.status, cookieOf(p.resp))
	}
	// Signing out forgets the cookie.
	p = f.post(t, "alice", "/console/logout", nil)
	redirected(t, p, "/console/login")
	if ck := cookieOf(p.resp); ck == nil || ck.MaxAge >= 0 {
		t.Fatalf("logout cookie %+v, want it expired", ck)
	}
}

func TestUnauthenticatedPagesRedirectToLogin(t *testing.T) {
	f := newFixture(t)
	session, sub, _ := f.parked(t, "alice")
	for _, path := range []string{"/console/", "/console/sessions/" + session, "/console/sessions/" + session + "/turns/" + sub,
		"/console/approvals", "/console/workflows", "/console/schedules", "/console/usage"} {
		p := f.get(t, "", path)
		if loc := redirected(t, p, "/console/login?next="); loc != "/console/login?next="+url.QueryEscape(path) {
			t.Fatalf("GET %s without credentials went to %s", path, loc)
		}
		// A revoked or made-up token is the same.
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: "made-up"})
		redirected(t, f.do(t, req), "/console/login?next=")
	}
}

func TestAnotherPrincipalsWorkIsNotFound(t *testing.T) {
	f := newFixture(t)
	session, sub, aid := f.parked(t, "alice")
	wf := f.id(t, "alice", "/v1/workflows", `{"name":"w","script":"result = 1"}`)
	run := f.id(t, "alice", "/v1/workflows/"+wf+"/runs", `{}`)
	f.h.Drain()
	for _, path := range []string{"/console/sessions/" + session, "/console/sessions/" + session + "/turns/" + sub,
		"/console/workflows/" + wf, "/console/workflows/" + wf + "/runs/" + run, "/console/sessions/nope"} {
		p := f.get(t, "bob", path)
		if p.status != http.StatusNotFound || attr(one(t, p.doc, "#error"), "data-code") != "not_found" {
			t.Fatalf("bob GET %s: %d %s, want the 404 page", path, p.status, clip(p.body))
		}
		everyPage(t, p.doc)
	}
	// Nor may bob act on them: the API's 404 again, and nothing changes.
	p := f.post(t, "bob", "/console/sessions/"+session+"/approvals/"+aid, url.Values{"decision": {"allow"}})
	if p.status != http.StatusNotFound {
		t.Fatalf("bob approving alice's call: %d", p.status)
	}
	if got := f.h.Get(sub); got.Approvals[0].Decision != "" {
		t.Fatalf("bob's decision reached alice's turn: %+v", got.Approvals[0])
	}
	// Bob's lists hold none of alice's.
	for _, path := range []string{"/console/", "/console/approvals", "/console/workflows"} {
		if body := f.get(t, "bob", path).body; strings.Contains(body, session) || strings.Contains(body, wf) {
			t.Fatalf("bob's %s shows alice's work", path)
		}
	}
	// The operator reads them, and may not decide in alice's session (the API's 403).
	f.ok(t, "ops", "/console/sessions/"+session+"/turns/"+sub)
	if p := f.post(t, "ops", "/console/sessions/"+session+"/approvals/"+aid, url.Values{"decision": {"allow"}}); p.status != http.StatusForbidden {
		t.Fatalf("the operator approving in alice's session: %d", p.status)
	}
}

func TestCrossSitePostsAreRefused(t *testing.T) {
	f := newFixture(t)
	session, sub, aid := f.parked(t, "alice")
	for name, set := range map[string]func(*http.Request){
		"Sec-Fetch-Site cross-site": func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"another Origin":            func(r *http.Request) { r.Header.Del("Sec-Fetch-Site"); r.Header.Set("Origin", "https://evil.example") },
	} {
		for _, path := range []string{"/console/sessions/" + session + "/approvals/" + aid, "/console/sessions/" + session + "/turns/" + sub + "/cancel",
			"/console/sessions/" + session + "/submit", "/console/login"} {
			form := url.Values{"decision": {"allow"}, "prompt": {"x"}, "token": {f.tok["alice"]}}
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			f.browse(req, "alice")
			set(req)
			p := f.do(t, req)
			if p.status != http.StatusForbidden || attr(one(t, p.doc, "#error"), "data-code") != "cross_origin" || cookieOf(p.resp) != nil {
				t.Fatalf("%s POST %s: %d %s, want the 403 page", name, path, p.status, clip(p.body))
			}
		}
	}
	if got := f.h.Get(sub); got.Phase.Terminal() || got.Approvals[0].Decision != "" {
		t.Fatalf("a refused post changed the turn: %s %+v", got.Phase, got.Approvals)
	}
}
