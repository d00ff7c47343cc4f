package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/auth"
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
	data := t.TempDir()
	tokens := auth.Open(data) // as cairn dev: token is the owner's (an operator)
	if err := tokens.SetOwner(token); err != nil {
		t.Fatal(err)
	}
	rt, err := backend.New(context.Background(), backend.Config{
		DataDir: data, Env: []string{"PATH=" + os.Getenv("PATH")},
		Isolate: []string{"false"}, // workflows served; no run in these tests needs to evaluate
		Runtime: assemble.Config{Authenticate: tokens.Request},
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
	wfr := f.call(t, "POST", "/v1/workflows", `{"name":"w","script":"result = 1"}`, nil)
	if wfr.status != http.StatusCreated {
		t.Fatalf("create workflow: %d %s", wfr.status, wfr.raw)
	}
	wf := "/v1/workflows/" + wfr.body["id"].(string)
	subs := "/v1/sessions/" + sid + "/submissions"
	evs := subs + "/sub_nope/events"
	badCursor := base64.RawURLEncoding.EncodeToString([]byte(`{"a":"x","o":-1}`))
	// mustSay: the message of these rows names the field at fault.
	mustSay := map[string]string{
		"prompt invalid utf-8":           `"prompt"`,
		"prompt lone surrogate":          `"prompt"`,
		"system invalid utf-8":           `"system"`,
		"tool name invalid utf-8":        `"tools[1].name"`,
		"policy key invalid utf-8":       `"policy.tools"`,
		"tool config invalid utf-8":      `"tools[0].config.x"`,
		"reason invalid utf-8":           `"reason"`,
		"script invalid utf-8":           `"script"`,
		"expression invalid utf-8":       `"expression"`,
		"run input invalid utf-8":        `"input.k[0]"`,
		"max_wall_seconds overflow":      "limits.max_wall_seconds",
		"approval timeout overflow":      "policy.approval_timeout_seconds",
		"limits null":                    `"limits"`,
		"null session body":              "JSON object",
		"cron step overflow":             "step",
		"wait wraps time.Duration":       "wait",
		"sandbox memory over its bound":  "sandbox.memory_mib",
		"sandbox cpu negative":           "sandbox.cpu",
		"max_steps over its bound":       "limits.max_steps",
		"max_tokens over its bound":      "limits.max_tokens",
		"max_wall_seconds over 30 days":  "limits.max_wall_seconds",
		"approval timeout over 30 days":  "policy.approval_timeout_seconds",
		"approval timeout negative":      "approval_timeout_seconds",
		"idempotency key invalid utf-8":  "Idempotency-Key",
		"query value invalid utf-8":      "cursor",
		"limit above the page maximum":   "limit",
		"events limit above its maximum": "limit",
	}
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

		// issue 13: bodies that are not an object, nulls, invalid UTF-8
		{"null session body", "POST", "/v1/sessions", `null`, nil, 400, "invalid_request"},
		{"null session body with space", "POST", "/v1/sessions", " \n null ", nil, 400, "invalid_request"},
		{"array session body", "POST", "/v1/sessions", `[]`, nil, 400, "invalid_request"},
		{"string session body", "POST", "/v1/sessions", `"scripted:plain"`, nil, 400, "invalid_request"},
		{"number session body", "POST", "/v1/sessions", `7`, nil, 400, "invalid_request"},
		{"empty session body", "POST", "/v1/sessions", ``, nil, 400, "invalid_request"},
		{"limits null", "POST", "/v1/sessions", `{"limits":null}`, nil, 400, "invalid_request"},
		{"tools null", "POST", "/v1/sessions", `{"tools":null}`, nil, 400, "invalid_request"},
		{"policy null", "POST", "/v1/sessions", `{"policy":null}`, nil, 400, "invalid_request"},
		{"policy tools null", "POST", "/v1/sessions", `{"policy":{"tools":null}}`, nil, 400, "invalid_request"},
		{"tool entry null", "POST", "/v1/sessions", `{"tools":[null]}`, nil, 400, "invalid_request"},
		{"model null", "POST", "/v1/sessions", `{"model":null}`, nil, 400, "invalid_request"},
		{"max_steps null", "POST", "/v1/sessions", `{"limits":{"max_steps":null}}`, nil, 400, "invalid_request"},
		{"system invalid utf-8", "POST", "/v1/sessions", "{\"system\":\"ok \xff\xfe\"}", nil, 400, "invalid_request"},
		{"system lone surrogate", "POST", "/v1/sessions", `{"system":"a\udc00b"}`, nil, 400, "invalid_request"},
		{"tool name invalid utf-8", "POST", "/v1/sessions", "{\"tools\":[{\"name\":\"bash\"},{\"name\":\"b\xc3\"}]}", nil, 400, "invalid_request"},
		{"policy key invalid utf-8", "POST", "/v1/sessions", "{\"policy\":{\"tools\":{\"ba\xffsh\":\"allow\"}}}", nil, 400, "invalid_request"},
		{"tool config invalid utf-8", "POST", "/v1/sessions", "{\"tools\":[{\"name\":\"bash\",\"config\":{\"x\":\"\xed\xa0\x80\"}}]}", nil, 400, "invalid_request"},
		// issue 13: numbers that become a duration or a count, bounded at creation
		{"max_wall_seconds overflow", "POST", "/v1/sessions", `{"limits":{"max_wall_seconds":9300000000}}`, nil, 400, "invalid_request"},
		{"max_wall_seconds over 30 days", "POST", "/v1/sessions", `{"limits":{"max_wall_seconds":2592001}}`, nil, 400, "invalid_request"},
		{"max_wall_seconds beyond int64", "POST", "/v1/sessions", `{"limits":{"max_wall_seconds":9223372036854775808}}`, nil, 400, "invalid_request"},
		{"max_wall_seconds fraction", "POST", "/v1/sessions", `{"limits":{"max_wall_seconds":1.5}}`, nil, 400, "invalid_request"},
		{"max_wall_seconds exponent", "POST", "/v1/sessions", `{"limits":{"max_wall_seconds":1e10}}`, nil, 400, "invalid_request"},
		{"max_wall_seconds negative", "POST", "/v1/sessions", `{"limits":{"max_wall_seconds":-1}}`, nil, 400, "invalid_request"},
		{"max_wall_seconds as a string", "POST", "/v1/sessions", `{"limits":{"max_wall_seconds":"60"}}`, nil, 400, "invalid_request"},
		{"max_steps over its bound", "POST", "/v1/sessions", `{"limits":{"max_steps":1000000000}}`, nil, 400, "invalid_request"},
		{"max_tokens over its bound", "POST", "/v1/sessions", `{"limits":{"max_tokens":9223372036854775807}}`, nil, 400, "invalid_request"},
		{"approval timeout overflow", "POST", "/v1/sessions", `{"policy":{"approval_timeout_seconds":9300000000}}`, nil, 400, "invalid_request"},
		{"approval timeout over 30 days", "POST", "/v1/sessions", `{"policy":{"approval_timeout_seconds":2592001}}`, nil, 400, "invalid_request"},
		{"approval timeout negative", "POST", "/v1/sessions", `{"policy":{"approval_timeout_seconds":-5}}`, nil, 400, "invalid_request"},
		{"sandbox cpu negative", "POST", "/v1/sessions", `{"sandbox":{"cpu":-1}}`, nil, 400, "invalid_request"},
		{"sandbox cpu over its bound", "POST", "/v1/sessions", `{"sandbox":{"cpu":1099511627776}}`, nil, 400, "invalid_request"},
		{"sandbox memory over its bound", "POST", "/v1/sessions", `{"sandbox":{"memory_mib":9223372036854775807}}`, nil, 400, "invalid_request"},
		{"model name too long", "POST", "/v1/sessions", `{"model":"scripted:` + strings.Repeat("m", 300) + `"}`, nil, 400, "invalid_request"},
		{"too many bash rules", "POST", "/v1/sessions", `{"policy":{"bash":[` + strings.TrimSuffix(strings.Repeat(`{"pattern":"x","decision":"allow"},`, 300), ",") + `]}}`, nil, 400, "invalid_request"},
		{"system over 256 KiB", "POST", "/v1/sessions", `{"system":"` + big + `"}`, nil, 413, "too_large"},
		// issue 13: submissions
		{"null submission body", "POST", subs, `null`, nil, 400, "invalid_request"},
		{"array submission body", "POST", subs, `["hi"]`, nil, 400, "invalid_request"},
		{"prompt null", "POST", subs, `{"prompt":null}`, nil, 400, "invalid_request"},
		{"prompt invalid utf-8", "POST", subs, "{\"prompt\":\"caf\xe9\"}", nil, 400, "invalid_request"},
		{"prompt lone surrogate", "POST", subs, `{"prompt":"\ud83d"}`, nil, 400, "invalid_request"},
		{"prompt overlong encoding", "POST", subs, "{\"prompt\":\"\xc0\xaf\"}", nil, 400, "invalid_request"},
		{"idempotency key invalid utf-8", "POST", subs, `{"prompt":"hi"}`, map[string]string{"Idempotency-Key": "k\xff"}, 400, "invalid_request"},
		{"idempotency key too long", "POST", subs, `{"prompt":"hi"}`, map[string]string{"Idempotency-Key": strings.Repeat("k", 300)}, 400, "invalid_request"},
		// issue 13: ?wait= bounded before it is scaled, capped below the api function's timeout
		{"wait wraps time.Duration", "GET", evs + "?wait=18446744074", ``, nil, 400, "invalid_request"},
		{"wait max uint64", "GET", evs + "?wait=18446744073709551615", ``, nil, 400, "invalid_request"},
		{"wait max int64 seconds", "GET", evs + "?wait=9223372036854775807", ``, nil, 400, "invalid_request"},
		{"wait above the cap", "GET", evs + "?wait=26", ``, nil, 400, "invalid_request"},
		{"wait duration above the cap", "GET", evs + "?wait=26s", ``, nil, 400, "invalid_request"},
		{"wait duration overflow", "GET", evs + "?wait=9999999999h", ``, nil, 400, "invalid_request"},
		{"wait negative", "GET", evs + "?wait=-1", ``, nil, 400, "invalid_request"},
		{"wait exponent", "GET", evs + "?wait=1e3", ``, nil, 400, "invalid_request"},
		{"after beyond int64", "GET", evs + "?after=99999999999999999999", ``, nil, 400, "invalid_request"},
		{"events limit above its maximum", "GET", evs + "?limit=501", ``, nil, 400, "invalid_request"},
		{"events limit zero", "GET", evs + "?limit=0", ``, nil, 400, "invalid_request"},
		// issue 13: list parameters
		{"limit zero", "GET", "/v1/sessions?limit=0", ``, nil, 400, "invalid_request"},
		{"limit above the page maximum", "GET", "/v1/sessions?limit=101", ``, nil, 400, "invalid_request"},
		{"limit beyond int64", "GET", "/v1/sessions?limit=99999999999999999999", ``, nil, 400, "invalid_request"},
		{"limit not a number", "GET", "/v1/sessions?limit=ten", ``, nil, 400, "invalid_request"},
		{"cursor garbage", "GET", "/v1/sessions?cursor=%21%21", ``, nil, 400, "invalid_request"},
		{"cursor negative offset", "GET", "/v1/sessions?cursor=" + badCursor, ``, nil, 400, "invalid_request"},
		{"query value invalid utf-8", "GET", "/v1/sessions?cursor=%ff", ``, nil, 400, "invalid_request"},
		{"query value too long", "GET", "/v1/sessions?cursor=" + strings.Repeat("a", 2000), ``, nil, 400, "invalid_request"},
		{"submissions bad phase", "GET", subs + "?phase=NOPE", ``, nil, 400, "invalid_request"},
		{"submissions bad cursor", "GET", subs + "?cursor=xyz", ``, nil, 400, "invalid_request"},
		{"transcript bad limit", "GET", "/v1/sessions/" + sid + "/transcript?limit=1000", ``, nil, 400, "invalid_request"},
		{"approvals bad limit", "GET", "/v1/sessions/" + sid + "/approvals?limit=-1", ``, nil, 400, "invalid_request"},
		{"runs bad limit", "GET", wf + "/runs?limit=0", ``, nil, 400, "invalid_request"},
		{"run nodes bad cursor", "GET", wf + "/runs/run_nope/nodes?cursor=%7B%7D", ``, nil, 400, "invalid_request"},
		{"path id invalid utf-8", "GET", "/v1/sessions/ses_%ff", ``, nil, 404, "not_found"},
		{"path id too long", "GET", "/v1/sessions/" + strings.Repeat("s", 600), ``, nil, 404, "not_found"},
		// issue 13: approvals, auth
		{"null decision body", "POST", "/v1/sessions/" + sid + "/approvals/apr_nope", `null`, nil, 400, "invalid_request"},
		{"reason invalid utf-8", "POST", "/v1/sessions/" + sid + "/approvals/apr_nope", "{\"decision\":\"deny\",\"reason\":\"\xff\"}", nil, 400, "invalid_request"},
		{"reason too long", "POST", "/v1/sessions/" + sid + "/approvals/apr_nope", `{"decision":"deny","reason":"` + strings.Repeat("r", 5000) + `"}`, nil, 413, "too_large"},
		{"basic auth scheme", "GET", "/v1/sessions", ``, map[string]string{"Authorization": "Basic " + token}, 401, "unauthorized"},
		{"bearer without a token", "GET", "/v1/sessions", ``, map[string]string{"Authorization": "Bearer"}, 401, "unauthorized"},
		{"bearer token as the scheme", "GET", "/v1/sessions", ``, map[string]string{"Authorization": "Bearer" + token}, 401, "unauthorized"},
		// issue 13: workflows and schedules
		{"null workflow body", "POST", "/v1/workflows", `null`, nil, 400, "invalid_request"},
		{"script invalid utf-8", "POST", "/v1/workflows", "{\"name\":\"w\",\"script\":\"result = '\xff'\"}", nil, 400, "invalid_request"},
		{"null run body", "POST", wf + "/runs", `null`, nil, 400, "invalid_request"},
		{"run input invalid utf-8", "POST", wf + "/runs", "{\"input\":{\"k\":[\"\xff\"]}}", nil, 400, "invalid_request"},
		{"run idempotency key invalid utf-8", "POST", wf + "/runs", `{}`, map[string]string{"Idempotency-Key": "\xfe"}, 400, "invalid_request"},
		{"null schedule body", "POST", wf + "/schedules", `null`, nil, 400, "invalid_request"},
		{"cron step overflow", "POST", wf + "/schedules", `{"expression":"cron(1/9223372036854775807 * * * ? *)"}`, nil, 400, "invalid_request"},
		{"cron star step overflow", "POST", wf + "/schedules", `{"expression":"cron(0 */9223372036854775807 * * ? *)"}`, nil, 400, "invalid_request"},
		{"cron year step overflow", "POST", wf + "/schedules", `{"expression":"cron(0 0 1 1 ? 1970/9223372036854775807)"}`, nil, 400, "invalid_request"},
		{"cron step beyond int64", "POST", wf + "/schedules", `{"expression":"cron(0/99999999999999999999 * * * ? *)"}`, nil, 400, "invalid_request"},
		{"rate overflow", "POST", wf + "/schedules", `{"expression":"rate(9223372036854775807 minutes)"}`, nil, 400, "invalid_request"},
		{"rate beyond int64", "POST", wf + "/schedules", `{"expression":"rate(99999999999999999999 days)"}`, nil, 400, "invalid_request"},
		{"expression too long", "POST", wf + "/schedules", `{"expression":"cron(0 12 * * ? *)` + strings.Repeat(" ", 300) + `"}`, nil, 400, "invalid_request"},
		{"expression invalid utf-8", "POST", wf + "/schedules", "{\"expression\":\"rate(5 minutes)\xff\"}", nil, 400, "invalid_request"},
		{"expression null", "POST", wf + "/schedules", `{"expression":null}`, nil, 400, "invalid_request"},
		{"schedule input over 256 KiB", "POST", wf + "/schedules", `{"expression":"rate(5 minutes)","input":"` + big + `"}`, nil, 413, "too_large"},
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
			if want := mustSay[c.name]; want != "" && !strings.Contains(e["message"].(string), want) {
				t.Fatalf("message %q does not name %s", e["message"], want)
			}
		})
	}
	list := f.call(t, "GET", "/v1/sessions", "", nil)
	if n := len(list.body["sessions"].([]any)); n != 1 {
		t.Fatalf("bad input stored sessions: %d, want 1", n)
	}
	sl := f.call(t, "GET", subs, "", nil)
	if n := len(sl.body["submissions"].([]any)); n != 0 {
		t.Fatalf("bad input stored %d submissions", n)
	}
	if sc, err := f.rt.Ports.Workflows.ListSchedules(context.Background()); err != nil || len(sc) != 0 {
		t.Fatalf("bad input stored schedules: %v %v", sc, err)
	}
	if runs := f.call(t, "GET", wf+"/runs", "", nil); len(runs.body["runs"].([]any)) != 0 {
		t.Fatalf("bad input started runs: %s", runs.raw)
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

// envelopeSize is a response body's size once the api Lambda's JSON
// envelope escapes it as a string (what its 6 MB limit counts).
func envelopeSize(raw string) int {
	return len(raw) + strings.Count(raw, `"`) + strings.Count(raw, `\`)
}

const lambdaLimit = 6 << 20

// pages follows next_cursor from path and returns every item of field.
func (f *fixture) pages(t *testing.T, path, field string) []map[string]any {
	return f.pagesFrom(t, path, field, "")
}

// pagesFrom is pages from the page at cursor next.
func (f *fixture) pagesFrom(t *testing.T, path, field, next string) []map[string]any {
	t.Helper()
	var all []map[string]any
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for n := 0; ; n++ {
		p := path
		if next != "" {
			p += sep + "cursor=" + next
		}
		r := f.call(t, "GET", p, "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.status, short(r.raw))
		}
		if sz := envelopeSize(r.raw); sz > lambdaLimit {
			t.Fatalf("GET %s: %d bytes in the Lambda envelope, over 6 MB", p, sz)
		}
		for _, it := range r.body[field].([]any) {
			all = append(all, it.(map[string]any))
		}
		next, _ = r.body["next_cursor"].(string)
		if next == "" {
			return all
		}
		if n > 1000 {
			t.Fatalf("GET %s: no end of pages", path)
		}
	}
}

func ids(items []map[string]any) []string {
	var out []string
	for _, it := range items {
		out = append(out, it["id"].(string))
	}
	return out
}

func TestListsArePagedSummarisedAndFitTheLambdaLimit(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:plain","limits":{"max_tokens":1000000000}}`)
	const long = 250 << 10
	var subIDs []string
	submit := func(n int) {
		for range n {
			i := len(subIDs)
			r := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"`+strings.Repeat(string(rune('a'+i)), long)+`"}`, nil)
			if r.status != http.StatusAccepted {
				t.Fatalf("submit %d: %d %s", i, r.status, short(r.raw))
			}
			subIDs = append(subIDs, r.body["id"].(string))
		}
	}

	// Transcript: 10 turns of 250 KiB prompts and their echoes (5 MB),
	// paged under the limit, root → head, each node once.
	submit(10)
	for deadline := time.Now().Add(3 * time.Minute); ; {
		r := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+subIDs[9]+"/events?wait=25", "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("events with wait=25: %d %s", r.status, short(r.raw))
		}
		if r.body["done"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the 10 turns did not end")
		}
	}
	if tr := f.call(t, "GET", "/v1/sessions/"+sid+"/transcript", "", nil); tr.body["next_cursor"] == "" {
		t.Fatalf("5 MB of transcript in one page of %d bytes", len(tr.raw))
	}
	nodes := f.pages(t, "/v1/sessions/"+sid+"/transcript", "nodes")
	seen := map[string]bool{}
	users := 0
	for i, n := range nodes {
		if seen[n["id"].(string)] {
			t.Fatalf("node %s listed twice", n["id"])
		}
		seen[n["id"].(string)] = true
		if i > 0 && n["parent"] != nodes[i-1]["id"] {
			t.Fatalf("node %d's parent %v is not the node before it", i, n["parent"])
		}
		if n["role"] == "user" {
			users++
		}
	}
	if users != 10 {
		t.Fatalf("transcript has %d user nodes, want 10", users)
	}
	if got := ids(f.pages(t, "/v1/sessions/"+sid+"/submissions?phase=COMMITTED&limit=3", "submissions")); !slices.Equal(got, subIDs) {
		t.Fatalf("COMMITTED submissions: %d of 10", len(got))
	}
	if got := f.pages(t, "/v1/sessions/"+sid+"/submissions?phase=FAILED", "submissions"); len(got) != 0 {
		t.Fatalf("FAILED submissions: %d", len(got))
	}

	// Submissions: 20 long prompts (10 more, left running) list as one
	// small page of summaries, all 20 through cursors, each prompt whole
	// when read one by one.
	submit(10)
	first := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions", "", nil)
	if len(first.raw) > 64<<10 || len(first.body["submissions"].([]any)) != 20 {
		t.Fatalf("GET …/submissions of 20 long prompts answered %d bytes", len(first.raw))
	}
	for _, it := range first.body["submissions"].([]any) {
		m := it.(map[string]any)
		if len(m["prompt"].(string)) > 256 || m["prompt_bytes"].(float64) != long || m["tool_requests"] != nil {
			t.Fatalf("summary is not one: prompt %d bytes, prompt_bytes %v", len(m["prompt"].(string)), m["prompt_bytes"])
		}
	}
	if got := ids(f.pages(t, "/v1/sessions/"+sid+"/submissions?limit=7", "submissions")); !slices.Equal(got, subIDs) {
		t.Fatalf("paged submissions = %v, want %v", got, subIDs)
	}
	one := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+subIDs[13], "", nil)
	if len(one.body["prompt"].(string)) != long {
		t.Fatalf("one submission's prompt: %d bytes", len(one.body["prompt"].(string)))
	}

	// Sessions: summaries (no spec), newest first, every one once even
	// when sessions are created between pages.
	want := []string{sid}
	for range 24 {
		want = append(want, f.newSession(t, `{"model":"scripted:plain"}`))
	}
	slices.Reverse(want)
	p1 := f.call(t, "GET", "/v1/sessions?limit=10", "", nil)
	if p1.status != 200 || len(p1.body["sessions"].([]any)) != 10 || p1.body["next_cursor"] == "" {
		t.Fatalf("first page: %d %s", p1.status, short(p1.raw))
	}
	for _, it := range p1.body["sessions"].([]any) {
		if m := it.(map[string]any); m["spec"] != nil || m["model"] != "scripted:plain" {
			t.Fatalf("a session summary: %v", m)
		}
	}
	newer := f.newSession(t, `{"model":"scripted:plain"}`)
	var all []string
	for _, it := range p1.body["sessions"].([]any) {
		all = append(all, it.(map[string]any)["id"].(string))
	}
	all = append(all, ids(f.pagesFrom(t, "/v1/sessions?limit=10", "sessions", p1.body["next_cursor"].(string)))...)
	if !slices.Equal(all, want) || slices.Contains(all, newer) {
		t.Fatalf("sessions paged = %v\nwant %v", all, want)
	}

	// Events: ?limit= pages them; done only on the page that ends.
	ev := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+subIDs[9]+"/events?limit=1", "", nil)
	if len(ev.body["events"].([]any)) != 1 || ev.body["done"] == true {
		t.Fatalf("events?limit=1: %s", short(ev.raw))
	}

	// Lowercase scheme (RFC 7235).
	if r := f.call(t, "GET", "/v1/sessions?limit=1", "", map[string]string{"Authorization": "bearer " + token}); r.status != 200 {
		t.Fatalf("lowercase bearer: %d %s", r.status, short(r.raw))
	}
}

func TestRunsArePagedSummaries(t *testing.T) {
	f := newFixture(t)
	wf := f.call(t, "POST", "/v1/workflows", `{"name":"w","script":"result = 1 # `+strings.Repeat("x", 100<<10)+`"}`, nil)
	if wf.status != http.StatusCreated {
		t.Fatalf("create workflow: %d %s", wf.status, short(wf.raw))
	}
	base := "/v1/workflows/" + wf.body["id"].(string) + "/runs"
	var want []string
	for i := range 5 {
		r := f.call(t, "POST", base, `{"input":{"n":`+strconv.Itoa(i)+`}}`, nil)
		if r.status != http.StatusCreated {
			t.Fatalf("start run: %d %s", r.status, short(r.raw))
		}
		want = append(want, r.body["id"].(string))
	}
	runs := f.pages(t, base+"?limit=2", "runs")
	if got := ids(runs); len(got) != 5 {
		t.Fatalf("paged runs: %v", got)
	}
	seen := map[string]bool{}
	for _, r := range runs {
		if r["script"] != nil || r["input"] != nil || seen[r["id"].(string)] {
			t.Fatalf("run summary %v (or listed twice)", r)
		}
		seen[r["id"].(string)] = true
	}
	for _, id := range want {
		one := f.call(t, "GET", base+"/"+id, "", nil)
		if one.status != 200 || len(one.body["script"].(string)) < 100<<10 || one.body["nodes_next_cursor"] != "" {
			t.Fatalf("GET run %s: %d %s", id, one.status, short(one.raw))
		}
		if nodes := f.call(t, "GET", base+"/"+id+"/nodes", "", nil); nodes.status != 200 {
			t.Fatalf("GET run nodes: %d %s", nodes.status, short(nodes.raw))
		}
	}
}
