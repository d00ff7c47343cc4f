package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// follow long-polls a submission's events until the page that reaches its
// end (or until it has seen an event of type until, when given) and
// returns the types seen.
func (f *fixture) follow(t *testing.T, sid, sub, until string) []string {
	t.Helper()
	var after float64
	var types []string
	for range 200 {
		r := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+sub+"/events?after="+jsonNum(after)+"&wait=20s", "", nil)
		if r.status != 200 {
			t.Fatalf("events: %d %s", r.status, r.raw)
		}
		for _, e := range r.body["events"].([]any) {
			typ := e.(map[string]any)["type"].(string)
			types = append(types, typ)
			if typ == until {
				return types
			}
		}
		after = r.body["next"].(float64)
		if r.body["done"] == true {
			return types
		}
	}
	t.Fatalf("submission %s never ended (events %v)", sub, types)
	return nil
}

func (f *fixture) submitOK(t *testing.T, sid, body string) string {
	t.Helper()
	r := f.call(t, "POST", "/v1/sessions/"+sid+"/submissions", body, nil)
	if r.status != http.StatusAccepted {
		t.Fatalf("submit %s: %d %s", body, r.status, r.raw)
	}
	return r.body["id"].(string)
}

func (f *fixture) expect(t *testing.T, method, path, body string, status int, code string) reply {
	t.Helper()
	r := f.call(t, method, path, body, nil)
	if r.status != status {
		t.Fatalf("%s %s %s: %d %s, want %d", method, path, short(body), r.status, r.raw, status)
	}
	if code != "" {
		e, _ := r.body["error"].(map[string]any)
		if e == nil || e["code"] != code || e["message"] == "" {
			t.Fatalf("%s %s: body %s, want error code %q", method, path, r.raw, code)
		}
	}
	return r
}

func TestCancelThroughAPI(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:approval","policy":{"tools":{"bash":"ask"}}}`)
	sub := f.submitOK(t, sid, `{"prompt":"needs approval"}`)
	f.follow(t, sid, sub, "approval_needed")
	base := "/v1/sessions/" + sid + "/submissions/" + sub
	f.expect(t, "POST", base+"/cancel", `null`, 400, "invalid_request")
	f.expect(t, "POST", base+"/cancel", `{"reason":"`+strings.Repeat("x", 5000)+`"}`, 413, "too_large")
	f.expect(t, "POST", base+"/cancel", `{"why":"x"}`, 400, "invalid_request")
	f.expect(t, "POST", "/v1/sessions/"+sid+"/submissions/sub_nope/cancel", ``, 404, "not_found")
	r := f.expect(t, "POST", base+"/cancel", `{"reason":"wrong direction"}`, 200, "")
	if r.body["phase"] != "CANCELLED" || !strings.HasSuffix(r.body["error"].(string), ": wrong direction") {
		t.Fatalf("cancel: %s", r.raw)
	}
	if again := f.expect(t, "POST", base+"/cancel", ``, 200, ""); again.body["error"] != r.body["error"] {
		t.Fatalf("second cancel changed it: %s", again.raw)
	}
	if types := f.follow(t, sid, sub, ""); types[len(types)-1] != "cancelled" {
		t.Fatalf("events end %v, want cancelled", types)
	}
	if s := f.call(t, "GET", "/v1/sessions/"+sid, "", nil); len(s.body["pending_approvals"].([]any)) != 0 || s.body["active"] != nil {
		t.Fatalf("session after cancel: %s", s.raw)
	}
	// A committed turn is not cancelled.
	plain := f.newSession(t, `{"model":"scripted:plain"}`)
	done := f.submitOK(t, plain, `{"prompt":"hi"}`)
	f.follow(t, plain, done, "")
	f.expect(t, "POST", "/v1/sessions/"+plain+"/submissions/"+done+"/cancel", ``, 409, "conflict")
}

func TestRetryThroughAPI(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:multi","limits":{"max_steps":1}}`)
	sub := f.submitOK(t, sid, `{"prompt":"go"}`)
	f.follow(t, sid, sub, "")
	base := "/v1/sessions/" + sid + "/submissions/" + sub
	if r := f.call(t, "GET", base, "", nil); r.body["phase"] != "FAILED" {
		t.Fatalf("first run: %s", r.raw)
	}
	f.expect(t, "POST", base+"/retry", ``, 400, "invalid_request") // would trip max_steps again
	f.expect(t, "POST", base+"/retry", `{"limits":{"max_steps":-1}}`, 400, "invalid_request")
	f.expect(t, "POST", base+"/retry", `{"limits":{"max_steps":1e12}}`, 400, "invalid_request")
	r := f.expect(t, "POST", base+"/retry", `{"limits":{"max_steps":5}}`, 202, "")
	if rs, _ := r.body["retries"].([]any); len(rs) != 1 {
		t.Fatalf("retry: %s", r.raw)
	}
	f.follow(t, sid, sub, "") // to the page that reaches the end: the record is terminal then
	got := f.call(t, "GET", base, "", nil)
	if got.body["phase"] != "COMMITTED" || got.body["result"] != "All four calls finished." {
		t.Fatalf("after retry: %s", got.raw)
	}
	f.expect(t, "POST", base+"/retry", ``, 409, "conflict")
}

func TestForkAndTreeThroughAPI(t *testing.T) {
	f := newFixture(t)
	sid := f.newSession(t, `{"model":"scripted:plain"}`)
	one := f.submitOK(t, sid, `{"prompt":"one"}`)
	f.follow(t, sid, one, "")
	two := f.submitOK(t, sid, `{"prompt":"two"}`)
	f.follow(t, sid, two, "")
	leaf := f.call(t, "GET", "/v1/sessions/"+sid+"/submissions/"+one, "", nil).body["leaf"].(string)
	f.expect(t, "POST", "/v1/sessions/"+sid+"/submissions", `{"prompt":"x","parent":"nd_nope"}`, 400, "invalid_request")
	three := f.submitOK(t, sid, `{"prompt":"three","parent":"`+leaf+`"}`)
	f.follow(t, sid, three, "")
	texts := func(r reply) []string {
		var out []string
		for _, n := range r.body["nodes"].([]any) {
			b := n.(map[string]any)["blocks"].([]any)[0].(map[string]any)
			out = append(out, strings.TrimPrefix(b["text"].(string), "Hello from cairn's scripted model. You said: "))
		}
		return out
	}
	path := texts(f.expect(t, "GET", "/v1/sessions/"+sid+"/transcript", "", 200, ""))
	if strings.Join(path, ",") != "one,one,three,three" {
		t.Fatalf("head path %v", path)
	}
	tree := texts(f.expect(t, "GET", "/v1/sessions/"+sid+"/transcript?tree=1", "", 200, ""))
	if strings.Join(tree, ",") != "one,one,two,two,three,three" {
		t.Fatalf("tree %v", tree)
	}
	page := f.expect(t, "GET", "/v1/sessions/"+sid+"/transcript?tree=1&limit=4", "", 200, "")
	if len(page.body["nodes"].([]any)) != 4 || page.body["next_cursor"] == "" {
		t.Fatalf("tree page: %s", page.raw)
	}
	f.expect(t, "GET", "/v1/sessions/"+sid+"/transcript?tree=2", "", 400, "invalid_request")
	f.expect(t, "GET", "/v1/sessions/"+sid+"/transcript?tree=1&leaf="+leaf, "", 400, "invalid_request")
}
