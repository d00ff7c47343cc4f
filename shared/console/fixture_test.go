package console_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/auth"
	"github.com/cairnrun/cairn/shared/console"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// fixture is a real runtime (SQLite, local sandboxes, the scripted model,
// workflows in process) behind its API — and so its console — over HTTP,
// with three token principals: alice, bob and the operator ops. Turns run
// when the test drains the queues (h.Drain): nothing runs in the
// background, so no test waits on time.
type fixture struct {
	h   *enginetest.Harness
	srv *httptest.Server
	tok map[string]string
	cl  *http.Client // follows no redirect: the tests look at them
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	tokens := auth.Open(t.TempDir())
	f := &fixture{tok: map[string]string{}}
	for name, op := range map[string]bool{"alice": false, "bob": false, "ops": true} {
		tok, err := tokens.Add(name, op)
		if err != nil {
			t.Fatal(err)
		}
		f.tok[name] = tok
	}
	f.h = enginetest.NewConfig(t, assemble.Config{Authenticate: tokens.Request}, enginetest.Workflows(&enginetest.InProcess{}, nil))
	f.srv = httptest.NewServer(f.h.RT.API)
	t.Cleanup(f.srv.Close)
	f.cl = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return f
}

// api calls the JSON API as who and decodes the answer into out.
func (f *fixture) api(t *testing.T, who, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.tok[who])
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode
}

// id POSTs body as who and returns the id of what it made.
func (f *fixture) id(t *testing.T, who, path, body string) string {
	t.Helper()
	var got struct {
		ID string `json:"id"`
	}
	if st := f.api(t, who, http.MethodPost, path, body, &got); st >= 300 || got.ID == "" {
		t.Fatalf("POST %s %s: %d", path, body, st)
	}
	return got.ID
}

// browse is what a browser does on the console's own pages: the login
// cookie of who ("" for none), same-origin fetch metadata.
func (f *fixture) browse(req *http.Request, who string) {
	if who != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: f.tok[who]})
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
}

type page struct {
	status int
	resp   *http.Response
	body   string
	doc    *html.Node
}

// get fetches a console page as who.
func (f *fixture) get(t *testing.T, who, path string) page {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	f.browse(req, who)
	return f.do(t, req)
}

// post submits a console form as who, from the console's origin.
func (f *fixture) post(t *testing.T, who, path string, form url.Values) page {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.srv.URL)
	f.browse(req, who)
	return f.do(t, req)
}

func (f *fixture) do(t *testing.T, req *http.Request) page {
	t.Helper()
	resp, err := f.cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	p := page{status: resp.StatusCode, resp: resp, body: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		doc, err := html.Parse(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s %s: the page does not parse: %v", req.Method, req.URL.Path, err)
		}
		p.doc = doc
	}
	return p
}

// ok fetches a page as who and fails unless it is a 200 HTML page with the
// hooks every page has.
func (f *fixture) ok(t *testing.T, who, path string) *html.Node {
	t.Helper()
	p := f.get(t, who, path)
	if p.status != http.StatusOK || p.doc == nil {
		t.Fatalf("GET %s as %s: %d %s", path, who, p.status, clip(p.body))
	}
	everyPage(t, p.doc)
	return p.doc
}

// redirected fails unless p is a 303 to a path starting with prefix.
func redirected(t *testing.T, p page, prefix string) string {
	t.Helper()
	loc := p.resp.Header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(loc, prefix) {
		t.Fatalf("%d to %q, want 303 to %s…: %s", p.status, loc, prefix, clip(p.body))
	}
	return loc
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// A session of alice's whose one turn waits on an approval of bash.
func (f *fixture) parked(t *testing.T, who string) (session, sub, approval string) {
	t.Helper()
	session = f.id(t, who, "/v1/sessions", `{"model":"scripted:approval","policy":{"tools":{"bash":"ask"}}}`)
	sub = f.id(t, who, "/v1/sessions/"+session+"/submissions", `{"prompt":"needs approval"}`)
	f.h.Drain()
	var ap struct {
		Approvals []struct {
			ID string `json:"id"`
		} `json:"approvals"`
	}
	f.api(t, who, http.MethodGet, "/v1/sessions/"+session+"/approvals", "", &ap)
	if len(ap.Approvals) != 1 {
		t.Fatalf("the turn waits on %d approvals, want 1", len(ap.Approvals))
	}
	return session, sub, ap.Approvals[0].ID
}
