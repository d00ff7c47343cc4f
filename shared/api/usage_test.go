package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// TestUsageSums: GET /v1/usage sums a principal's turns (tokens and
// estimated cost), an operator's sum covers everyone by principal, and
// another principal's usage is refused.
func TestUsageSums(t *testing.T) {
	who := func(r *http.Request) (contracts.Principal, error) {
		name := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if name == "" {
			return contracts.Principal{}, contracts.ErrPermission
		}
		return contracts.Principal{Name: name, Operator: name == "ops"}, nil
	}
	h := enginetest.NewConfig(t, assemble.Config{Authenticate: who})
	srv := httptest.NewServer(h.RT.API)
	t.Cleanup(srv.Close)
	do := func(as, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader([]byte(body)))
		req.Header.Set("Authorization", "Bearer "+as)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	turns := map[string][]string{}
	for _, c := range []struct{ as, model string }{{"alice", "scripted:demo"}, {"alice", "scripted:plain"}, {"bob", "scripted:demo"}} {
		_, sess := do(c.as, "POST", "/v1/sessions", `{"model":"`+c.model+`"}`)
		_, sub := do(c.as, "POST", "/v1/sessions/"+sess["id"].(string)+"/submissions", `{"prompt":"go"}`)
		turns[c.as] = append(turns[c.as], sub["id"].(string))
	}
	h.Drain()
	sum := func(ids []string) (in, out float64) {
		for _, id := range ids {
			s := h.Get(id)
			if s.Phase != contracts.PhaseCommitted || s.Cost == nil {
				t.Fatalf("turn %s: %s, cost %+v", id, s.Phase, s.Cost)
			}
			in, out = in+float64(s.Usage.InputTokens), out+float64(s.Usage.OutputTokens)
		}
		return in, out
	}
	check := func(got map[string]any, ids []string) {
		t.Helper()
		in, out := sum(ids)
		u := got["usage"].(map[string]any)
		if got["turns"] != float64(len(ids)) || u["input_tokens"] != in || u["output_tokens"] != out {
			t.Fatalf("sum %v, want %d turns, %v in, %v out", got, len(ids), in, out)
		}
		if _, ok := got["cost"].(map[string]any)["USD"]; !ok {
			t.Fatalf("no USD cost in %v", got)
		}
	}
	code, mine := do("alice", "GET", "/v1/usage", "")
	if code != 200 || mine["principal"] != "alice" {
		t.Fatalf("alice: %d %v", code, mine)
	}
	check(mine["total"].(map[string]any), turns["alice"])
	if _, bobs := mine["by_principal"].(map[string]any)["bob"]; bobs {
		t.Fatalf("alice sees bob's usage: %v", mine)
	}
	if code, _ := do("bob", "GET", "/v1/usage?principal=alice", ""); code != http.StatusForbidden {
		t.Fatalf("bob asking for alice's usage: %d, want 403", code)
	}
	code, all := do("ops", "GET", "/v1/usage", "")
	if code != 200 {
		t.Fatalf("ops: %d %v", code, all)
	}
	check(all["total"].(map[string]any), append(append([]string{}, turns["alice"]...), turns["bob"]...))
	check(all["by_principal"].(map[string]any)["bob"].(map[string]any), turns["bob"])
	code, one := do("ops", "GET", "/v1/usage?principal=bob", "")
	if code != 200 {
		t.Fatalf("ops for bob: %d", code)
	}
	check(one["total"].(map[string]any), turns["bob"])
	if code, later := do("alice", "GET", "/v1/usage?from=2099-01-01T00:00:00Z&to=2099-02-01T00:00:00Z", ""); code != 200 || later["total"].(map[string]any)["turns"] != float64(0) {
		t.Fatalf("a range with no turns: %d %v", code, later)
	}
	for _, q := range []string{"from=yesterday", "to=1", "from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z"} {
		if code, body := do("alice", "GET", "/v1/usage?"+q, ""); code != http.StatusBadRequest {
			t.Errorf("%s: %d %v, want 400", q, code, body)
		}
	}
}
