package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/backend"
)

const token = "test-token"

type fixture struct {
	srv *httptest.Server
	rt  *assemble.Runtime
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rt, err := backend.New(context.Background(), backend.Config{
		DataDir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")},
		Runtime: assemble.Config{Token: token},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rt.Serve(ctx); close(done) }()
	srv := httptest.NewServer(rt.API)
	t.Cleanup(func() { srv.Close(); cancel(); <-done; rt.Close() })
	return &fixture{srv: srv, rt: rt}
}

type reply struct {
	status int
	body   map[string]any
	raw    string
}

func (f *fixture) call(t *testing.T, method, path, body string, hdr map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func (f *fixture) newSession(t *testing.T, spec string) string {
	t.Helper()
	r := f.call(t, "POST", "/v1/sessions", spec, nil)
	if r.status != http.StatusCreated {
		t.Fatalf("create session: %d %s", r.status, r.raw)
	}
	return r.body["id"].(string)
}

func TestBadInputIsA4xxJSONErrorAndStoresNothing(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:plain"}`)
	big := strings.Repeat("x", 300<<10)
	huge := strings.Repeat("x", 2<<20)
	cases := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		code                     string
	}{
		{"malformed json", "POST", "/v1/sessions", `{"model":`, nil, 400, "invalid_request"},
		{"unknown field", "POST", "/v1/sessions", `{"modle":"scripted:plain"}`, nil, 400, "invalid_request"},
		{"trailing data", "POST", "/v1/sessions", `{} {}`, nil, 400, "invalid_request"},
		{"unknown model provider", "POST", "/v1/sessions", `{"model":"nope:x"}`, nil, 400, "invalid_request"},
		{"unknown scripted scenario", "POST", "/v1/sessions", `{"model":"scripted:nope"}`, nil, 400, "invalid_request"},
		{"unknown tool", "POST", "/v1/sessions", `{"tools":[{"name":"rm_rf"}]}`, nil, 400, "invalid_request"},
		{"bad policy word", "POST", "/v1/sessions", `{"policy":{"default":"maybe"}}`, nil, 400, "invalid_request"},
		{"negative limit", "POST", "/v1/sessions", `{"limits":{"max_steps":-1}}`, nil, 400, "invalid_request"},
		{"body over 1 MiB", "POST", "/v1/sessions", `{"system":"` + huge + `"}`, nil, 413, "too_large"},
		{"wrong token", "POST", "/v1/sessions", `{}`, map[string]string{"Authorization": "Bearer nope"}, 401, "unauthorized"},
		{"no token", "GET", "/v1/sessions", ``, map[string]string{"Authorization": ""}, 401, "unauthorized"},
		{"missing prompt", "POST", "/v1/sessions/" + sid + "/submissions", `{}`, nil, 400, "invalid_request"},
		{"prompt wrong type", "POST", "/v1/sessions/" + sid + "/submissions", `{"prompt":7}`, nil, 400, "invalid_request"},
		{"oversized prompt", "POST", "/v1/sessions/" + sid + "/submissions", `{"prompt":"` + big + `"}`, nil, 413, "too_large"},
		{"submission body over 1 MiB", "POST", "/v1/sessions/" + sid + "/submissions", `{"prompt":"` + huge + `"}`, nil, 413, "too_large"},
		{"unknown session submit", "POST", "/v1/sessions/ses_nope/submissions", `{"prompt":"hi"}`, nil, 404, "not_found"},
		{"unknown session get", "GET", "/v1/sessions/ses_nope", ``, nil, 404, "not_found"},
		{"unknown submission", "GET", "/v1/sessions/" + sid + "/submissions/sub_nope", ``, nil, 404, "not_found"},
		{"bad after", "GET", "/v1/sessions/" + sid + "/submissions/sub_nope/events?after=-1", ``, nil, 400, "invalid_request"},
		{"bad wait", "GET", "/v1/sessions/" + sid + "/submissions/sub_nope/events?wait=forever", ``, nil, 400, "invalid_request"},
		{"wait too long", "GET", "/v1/sessions/" + sid + "/submissions/sub_nope/events?wait=10m", ``, nil, 400, "invalid_request"},
		{"unknown approval", "POST", "/v1/sessions/" + sid + "/approvals/apr_nope", `{"decision":"allow"}`, nil, 404, "not_found"},
		{"bad decision", "POST", "/v1/sessions/" + sid + "/approvals/apr_nope", `{"decision":"maybe"}`, nil, 400, "invalid_request"},
		{"unknown route", "GET", "/v1/nope", ``, nil, 404, "not_found"},
		{"wrong method", "DELETE", "/v1/sessions", ``, nil, 405, "method_not_allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(t, c.method, c.path, c.body, c.hdr)
			if r.status != c.status {
				t.Fatalf("status = %d, want %d: %s", r.status, c.status, short(r.raw))
			}
			e, _ := r.body["error"].(map[string]any)
			if e == nil || e["code"] != c.code || e["message"] == "" {
				t.Fatalf("body = %s, want error code %s with a message", short(r.raw), c.code)
			}
		})
	}
	list := f.call(t, "GET", "/v1/sessions", "", nil)
	if n := len(list.body["sessions"].([]any)); n != 1 {
		t.Fatalf("bad input stored sessions: %d, want 1", n)
	}
	subs := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions", "", nil)
	if n := len(subs.body["submissions"].([]any)); n != 0 {
		t.Fatalf("bad input stored %d submissions", n)
	}
}

func short(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func TestSubmitFollowAndIdempotency(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:demo"}`)
	key := map[string]string{"Idempotency-Key": "abc"}
	first := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"go"}`, key)
	if first.status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", first.status, first.raw)
	}
	again := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"go"}`, key)
	if again.status != http.StatusOK || again.body["id"] != first.body["id"] {
		t.Fatalf("repeat with the same key: %d %s", again.status, again.raw)
	}
	sub := first.body["id"].(string)
	var after float64
	types := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+sub+"/events?after="+jsonNum(after)+"&wait=20s", "", nil)
		if r.status != 200 {
			t.Fatalf("events: %d %s", r.status, r.raw)
		}
		for _, e := range r.body["events"].([]any) {
			types[e.(map[string]any)["type"].(string)]++
		}
		after = r.body["next"].(float64)
		if r.body["done"] == true {
			break
		}
	}
	for _, want := range []string{contracts.EventStep, contracts.EventTextDelta, contracts.EventToolStarted, contracts.EventToolFinished, contracts.EventCommitted} {
		if types[want] == 0 {
			t.Errorf("no %s event (got %v)", want, types)
		}
	}
	got := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+sub, "", nil)
	if got.body["phase"] != "COMMITTED" || got.body["step"].(float64) != 3 {
		t.Fatalf("submission: %s", got.raw)
	}
	tr := f.call(t, "GET", "/v1/sessions/"+sid+"/transcript", "", nil)
	if n := len(tr.body["nodes"].([]any)); n != 8 {
		t.Fatalf("transcript nodes = %d, want 8", n)
	}
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(int64(f))
	return string(b)
}

func TestApprovalThroughAPI(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:approval","policy":{"tools":{"bash":"ask"}}}`)
	sub := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"go"}`, nil).body["id"].(string)
	var aid string
	var seen float64
	for aid == "" {
		r := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+sub+"/events?after="+jsonNum(seen)+"&wait=20s", "", nil)
		seen = r.body["next"].(float64)
		for _, e := range r.body["events"].([]any) {
			if m := e.(map[string]any); m["type"] == contracts.EventApprovalNeeded {
				aid = m["approval_id"].(string)
			}
		}
	}
	list := f.call(t, "GET", "/v1/sessions/"+sid+"/approvals", "", nil)
	if n := len(list.body["approvals"].([]any)); n != 1 {
		t.Fatalf("pending approvals = %d: %s", n, list.raw)
	}
	r := f.call(t, "POST", "/v1/sessions/"+sid+"/approvals/"+aid, `{"decision":"allow"}`, nil)
	if r.status != 200 || r.body["decision"] != "allow" {
		t.Fatalf("decide: %d %s", r.status, r.raw)
	}
	if r := f.call(t, "POST", "/v1/sessions/"+sid+"/approvals/"+aid, `{"decision":"deny"}`, nil); r.status != 409 && r.status != 404 {
		t.Fatalf("changing a decision: %d %s", r.status, r.raw)
	}
	var after float64
	for {
		r := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+sub+"/events?after="+jsonNum(after)+"&wait=20s", "", nil)
		after = r.body["next"].(float64)
		if r.body["done"] == true {
			if r.body["phase"] != "COMMITTED" {
				t.Fatalf("phase = %v", r.body["phase"])
			}
			return
		}
	}
}
