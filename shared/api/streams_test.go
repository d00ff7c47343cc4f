package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/api"
	"github.com/cairnrun/cairn/shared/auth"
	"github.com/cairnrun/cairn/shared/contracts"
)

// streamsFixture serves api.NewStreams over the fixture's stores, the
// principal named by the X-Principal header (what the stream function's
// authorizer context names on AWS).
func streamsFixture(t *testing.T, f *fixture) *httptest.Server {
	t.Helper()
	h := api.NewStreams(api.Config{
		Journal: f.rt.Ports.Journal, Events: f.rt.Ports.Events,
		Authenticate: func(r *http.Request) (contracts.Principal, error) {
			return contracts.Principal{Name: r.Header.Get("X-Principal")}, nil
		},
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, ctx context.Context, url, principal string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("X-Principal", principal)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestStreamsServeOnlyTheEventStreams: NewStreams streams a turn to its
// owner and ends it, and answers everything else — another principal's
// session, the long-poll, every other route and method — with a JSON
// error, writing nothing.
func TestStreamsServeOnlyTheEventStreams(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:plain"}`)
	sub := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"x"}`, nil).body["id"].(string)
	srv := streamsFixture(t, f)
	sse := map[string]string{"Accept": "text/event-stream"}
	turn := srv.URL + "/v1/sessions/" + sid + "/submissions/" + sub + "/events"

	resp := get(t, context.Background(), turn, auth.OwnerName, sse)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "event: end\n") || !strings.Contains(string(body), `"COMMITTED"`) {
		t.Fatalf("the owner's stream: %d %s", resp.StatusCode, body)
	}

	for _, c := range []struct {
		method, path, principal string
		hdr                     map[string]string
		status                  int
		code                    string
	}{
		{"GET", turn, "someone-else", sse, 404, "not_found"},
		{"GET", srv.URL + "/v1/sessions/" + sid + "/events", "someone-else", sse, 404, "not_found"},
		{"GET", turn, auth.OwnerName, nil, 406, "not_acceptable"},
		{"GET", turn + "?after=0&wait=1s", auth.OwnerName, map[string]string{"Accept": "application/json"}, 406, "not_acceptable"},
		{"GET", srv.URL + "/v1/sessions/" + sid + "/events", auth.OwnerName, nil, 406, "not_acceptable"},
		{"GET", srv.URL + "/v1/sessions/" + sid, auth.OwnerName, sse, 404, "not_found"},
		{"GET", srv.URL + "/v1/sessions", auth.OwnerName, nil, 404, "not_found"},
		{"GET", srv.URL + "/healthz", "", nil, 404, "not_found"},
		{"POST", srv.URL + "/v1/sessions/" + sid + "/submissions", auth.OwnerName, nil, 404, "not_found"},
		{"POST", turn, auth.OwnerName, sse, 404, "not_found"},
		{"GET", turn, "", sse, 401, "unauthorized"},
	} {
		req, _ := http.NewRequest(c.method, c.path, strings.NewReader(`{"prompt":"y"}`))
		req.Header.Set("X-Principal", c.principal)
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error struct{ Code string } }
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if json.Unmarshal(raw, &e) != nil || resp.StatusCode != c.status || e.Error.Code != c.code {
			t.Errorf("%s %s as %q %v: %d %s, want %d %s", c.method, strings.TrimPrefix(c.path, srv.URL), c.principal, c.hdr, resp.StatusCode, raw, c.status, c.code)
		}
	}
	subs, err := f.rt.Ports.Journal.ListSubmissions(context.Background(), sid, "", 0)
	if err != nil || len(subs) != 1 {
		t.Errorf("submissions after the stream endpoint's requests: %d, %v (it writes nothing)", len(subs), err)
	}
}

// TestAStreamEndsBeforeItsRequestsDeadline: a request with a deadline
// sooner than SSEMaxDuration (a Lambda invocation's timeout) ends its
// stream with "expired" SSEDeadlineMargin ahead of it, telling the client
// where to resume, rather than being cut off.
func TestAStreamEndsBeforeItsRequestsDeadline(t *testing.T) {
	f := newFixture(t)
	// Parked for an approval: the turn does not end while the stream runs.
	sid := f.newSession(t, `{"model":"scripted:approval","policy":{"tools":{"bash":"ask"}}}`)
	sub := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"go"}`, nil).body["id"].(string)
	srv := streamsFixture(t, f)
	for _, path := range []string{"/v1/sessions/" + sid + "/submissions/" + sub + "/events", "/v1/sessions/" + sid + "/events"} {
		start := time.Now()
		// The request's context reaches the handler through this wrapper:
		// httptest's server does not carry a client's deadline.
		h := api.NewStreams(api.Config{
			Journal: f.rt.Ports.Journal, Events: f.rt.Ports.Events,
			Authenticate: func(*http.Request) (contracts.Principal, error) {
				return contracts.Principal{Name: auth.OwnerName}, nil
			},
		})
		ctx, cancel := context.WithDeadline(context.Background(), start.Add(api.SSEDeadlineMargin+500*time.Millisecond))
		pr, pw := io.Pipe()
		w := &pipeWriter{h: http.Header{}, w: pw}
		req := httptest.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		req.Header.Set("Accept", "text/event-stream")
		go func() { h.ServeHTTP(w, req); pw.Close() }()
		var last string
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "event: ") {
				last = l
			}
		}
		took, cut := time.Since(start), ctx.Err()
		cancel()
		if last != "event: expired" || cut != nil {
			t.Errorf("%s: last message %q after %s (context: %v), want expired before the deadline", path, last, took, cut)
		}
	}
}

// pipeWriter is a ResponseWriter writing into a pipe, as lambdaurl's does.
type pipeWriter struct {
	h http.Header
	w io.Writer
}

func (p *pipeWriter) Header() http.Header         { return p.h }
func (p *pipeWriter) WriteHeader(int)             {}
func (p *pipeWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
