package console_test

import (
	"net/http"
	"net/url"
	"testing"
)

// An id of "." or ".." (the browser sends it as %2E%2E, which no mux
// cleans) is an id like any other: the console's request to the API must
// not become a path the API's mux cleans and redirects — which the
// console read as a 500, and for an action as a success that did nothing.
func TestDotSegmentIDsAreIDs(t *testing.T) {
	f := newFixture(t)
	session, sub, _ := f.parked(t, "alice")
	for _, path := range []string{"/console/sessions/%2E%2E", "/console/sessions/%2E", "/console/sessions/" + session + "/turns/%2E%2E",
		"/console/workflows/%2E%2E", "/console/workflows/%2E%2E/runs/%2E"} {
		p := f.get(t, "alice", path)
		if p.status != http.StatusNotFound || p.doc == nil || attr(one(t, p.doc, "#error"), "data-code") != "not_found" {
			t.Fatalf("GET %s: %d %s, want the 404 page", path, p.status, clip(p.body))
		}
	}
	for _, path := range []string{"/console/sessions/%2E%2E/turns/" + sub + "/cancel", "/console/sessions/" + session + "/turns/%2E%2E/cancel",
		"/console/sessions/%2E%2E/submit"} {
		if p := f.post(t, "alice", path, url.Values{"prompt": {"x"}}); p.status != http.StatusNotFound {
			t.Fatalf("POST %s: %d to %q, want the 404 page", path, p.status, p.resp.Header.Get("Location"))
		}
	}
	if got := f.h.Get(sub); got.Phase.Terminal() {
		t.Fatalf("the turn is %s", got.Phase)
	}
}
