package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// as calls the dev server at addr with token and decodes the JSON answer.
func as(t *testing.T, addr, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func sessionIDs(body map[string]any) []string {
	var out []string
	list, _ := body["sessions"].([]any)
	for _, it := range list {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

// Tokens added and revoked with `cairn token` while `cairn dev` runs are
// seen at once; each principal sees only its own sessions, the owner (an
// operator) everyone's; `cairn token list` never shows a token.
func TestTokenCommandsWhileDevRuns(t *testing.T) {
	data := t.TempDir()
	addr, owner, _ := startDevToken(t, data)

	out, code := cairn(t, "token", "add", "--data", data, "bob")
	m := regexp.MustCompile(`(?m)^([0-9a-f]{48})$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("token add: exit %d:\n%s", code, out)
	}
	bob := m[1]
	if out, code := cairn(t, "token", "add", "ops", "--operator", "--data", data); code != 0 || !strings.Contains(out, "operator") {
		t.Fatalf("token add --operator: exit %d:\n%s", code, out)
	}
	if out, code := cairn(t, "token", "add", "bob", "--data", data); code == 0 {
		t.Fatalf("adding bob twice succeeded:\n%s", out)
	}

	st, bobs := as(t, addr, bob, "POST", "/v1/sessions", `{"model":"scripted:plain"}`)
	if st != http.StatusCreated || bobs["owner"] != "bob" {
		t.Fatalf("bob creates a session: %d %v", st, bobs)
	}
	st, mine := as(t, addr, owner, "POST", "/v1/sessions", `{"model":"scripted:plain"}`)
	if st != http.StatusCreated || mine["owner"] != "owner" {
		t.Fatalf("the owner creates a session: %d %v", st, mine)
	}
	if st, _ := as(t, addr, bob, "GET", "/v1/sessions/"+mine["id"].(string), ""); st != http.StatusNotFound {
		t.Fatalf("bob reads the owner's session: %d, want 404", st)
	}
	if _, l := as(t, addr, bob, "GET", "/v1/sessions", ""); strings.Join(sessionIDs(l), ",") != bobs["id"] {
		t.Fatalf("bob lists %v, want only his %v", sessionIDs(l), bobs["id"])
	}
	if _, l := as(t, addr, owner, "GET", "/v1/sessions", ""); len(sessionIDs(l)) != 2 {
		t.Fatalf("the owner (an operator) lists %v, want both", sessionIDs(l))
	}
	if st, _ := as(t, addr, owner, "POST", "/v1/sessions/"+bobs["id"].(string)+"/submissions", `{"prompt":"hi"}`); st != http.StatusForbidden {
		t.Fatalf("an operator submits in bob's session: %d, want 403", st)
	}

	out, code = cairn(t, "token", "list", "--data", data)
	if code != 0 || strings.Contains(out, bob) || strings.Contains(out, owner) {
		t.Fatalf("token list: exit %d, or it shows a token:\n%s", code, out)
	}
	for _, want := range []string{"bob", "ops", "owner", "true", "false"} {
		if !strings.Contains(out, want) {
			t.Fatalf("token list lacks %q:\n%s", want, out)
		}
	}
	if fi, err := os.Stat(filepath.Join(data, "tokens.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens.json: %v %v", fi, err)
	}

	if out, code := cairn(t, "token", "revoke", "bob", "--data", data); code != 0 {
		t.Fatalf("token revoke: exit %d:\n%s", code, out)
	}
	if st, _ := as(t, addr, bob, "GET", "/v1/sessions", ""); st != http.StatusUnauthorized {
		t.Fatalf("bob after revoke: %d, want 401", st)
	}
	if out, code := cairn(t, "token", "revoke", "owner", "--data", data); code == 0 {
		t.Fatalf("revoking the owner succeeded:\n%s", out)
	}
	// `cairn sessions --addr --data` authenticates with DATA/token.
	if out, code := cairn(t, "sessions", "--addr", addr, "--data", data); code != 0 || !strings.Contains(out, mine["id"].(string)) {
		t.Fatalf("cairn sessions with DATA/token: exit %d:\n%s", code, out)
	}
}
