package server_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/testkit/conformance/sandboxtest"
)

const bearer = "Bearer " + testToken

func TestHealthNeedsNoTokenAndRevealsNone(t *testing.T) {
	url := start(t, server.Config{Workspace: t.TempDir()})
	a := send(t, http.MethodGet, url+proto.PathHealth, nil)
	if a.status != http.StatusOK || a.body != `{"ok":true,"protocol":1}` {
		t.Fatalf("health: %d %s", a.status, a.body)
	}
	a = send(t, http.MethodGet, url+proto.PathHealth, nil, "Authorization", bearer, proto.HeaderProtocol, "1")
	if strings.Contains(a.body, testToken) || strings.Contains(a.body, tokenHash(testToken)) {
		t.Errorf("health reveals the token: %s", a.body)
	}
}

// Without the right token nothing is done and nothing is revealed.
func TestUnauthorized(t *testing.T) {
	dir := t.TempDir()
	url := start(t, server.Config{Workspace: dir, StateDir: t.TempDir()})
	write := mustJSON(t, contracts.WriteFileRequest{Path: "pwned.txt", Content: "x"})
	exec := mustJSON(t, contracts.ExecRequest{Command: "touch pwned2.txt"})
	auths := map[string][]string{
		"no header":       nil,
		"wrong token":     {"Authorization", "Bearer wrong"},
		"token prefix":    {"Authorization", bearer[:len(bearer)-1]},
		"token suffix":    {"Authorization", bearer + "x"},
		"hash as token":   {"Authorization", "Bearer " + tokenHash(testToken)},
		"basic scheme":    {"Authorization", "Basic " + testToken},
		"bare token":      {"Authorization", testToken},
		"empty bearer":    {"Authorization", "Bearer "},
		"token elsewhere": {"X-Token", testToken},
	}
	for name, h := range auths {
		for _, rq := range []struct {
			method, path string
			body         []byte
		}{
			{http.MethodPost, proto.Path(proto.MethodWriteFile), write},
			{http.MethodPost, proto.Path(proto.MethodExec), exec},
			{http.MethodPost, proto.Path(proto.MethodListDir), []byte(`{"path":"."}`)},
			{http.MethodGet, proto.CallPath("call-1"), nil},
			{http.MethodPost, proto.PathCancel, []byte(`{"id":"call-1"}`)},
			{http.MethodGet, "/v1/nope", nil},
		} {
			a := send(t, rq.method, url+rq.path, rq.body, h...)
			if a.status != http.StatusUnauthorized || a.err.Code != proto.CodeUnauthorized {
				t.Errorf("%s %s: %d %+v, want 401 unauthorized", name, rq.path, a.status, a.err)
			}
			if strings.Contains(a.body, testToken) {
				t.Errorf("%s: answer reveals the token", name)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("workspace changed by unauthorized requests: %v, %v", entries, err)
	}
	// The right token works (and is accepted case-insensitively as to the scheme).
	a := send(t, http.MethodPost, url+proto.Path(proto.MethodWriteFile), write, "Authorization", "bearer "+testToken)
	if a.status != http.StatusOK || a.body != "{}" {
		t.Errorf("authorized write: %d %s", a.status, a.body)
	}
}

func TestProtocolVersion(t *testing.T) {
	url := start(t, server.Config{Workspace: t.TempDir()})
	list := []byte(`{"path":"."}`)
	for _, tc := range []struct {
		version string
		status  int
	}{{"", 200}, {"1", 200}, {"2", 400}, {"0", 400}, {"v1", 400}} {
		h := []string{"Authorization", bearer}
		if tc.version != "" {
			h = append(h, proto.HeaderProtocol, tc.version)
		}
		a := send(t, http.MethodPost, url+proto.Path(proto.MethodListDir), list, h...)
		if a.status != tc.status || tc.status == 400 && a.err.Code != proto.CodeInvalid {
			t.Errorf("version %q: %d %+v, want %d", tc.version, a.status, a.err, tc.status)
		}
	}
	if a := send(t, http.MethodGet, url+proto.PathHealth, nil, proto.HeaderProtocol, "2"); a.status != 400 {
		t.Errorf("health with version 2: %d", a.status)
	}
}

func TestRoutesAndBodies(t *testing.T) {
	dir := t.TempDir()
	url := start(t, server.Config{Workspace: dir, MaxBody: 1024})
	h := []string{"Authorization", bearer, proto.HeaderProtocol, "1"}
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"oversized body", "POST", "/v1/write_file", `{"path":"big.txt","content":"` + strings.Repeat("x", 2000) + `"}`, 413, proto.CodeTooLarge},
		{"malformed body", "POST", "/v1/read_file", `{"path":`, 400, proto.CodeInvalid},
		{"wrong type", "POST", "/v1/read_file", `{"path":1}`, 400, proto.CodeInvalid},
		{"unknown method", "POST", "/v1/chmod", `{}`, 404, proto.CodeNotFound},
		{"unversioned route", "POST", "/read_file", `{}`, 404, proto.CodeNotFound},
		{"GET on a method", "GET", "/v1/read_file", ``, 405, proto.CodeInvalid},
		{"POST on calls", "POST", "/v1/calls/x", ``, 405, proto.CodeInvalid},
		{"empty call id", "GET", "/v1/calls/", ``, 400, proto.CodeInvalid},
		{"call without ledger", "GET", "/v1/calls/call-9", ``, 200, ""},
		{"dot-dot", "POST", "/v1/read_file", `{"path":"../etc/passwd"}`, 403, proto.CodePermission},
		{"absolute", "POST", "/v1/write_file", `{"path":"/tmp/pwned","content":"x"}`, 403, proto.CodePermission},
		{"missing", "POST", "/v1/stat", `{"path":"nope"}`, 404, proto.CodeNotFound},
		{"remove", "POST", "/v1/remove", `{"path":"nope","recursive":true}`, 404, proto.CodeNotFound},
		{"make_dir", "POST", "/v1/make_dir", `{"path":"d/e"}`, 200, ""},
		{"glob", "POST", "/v1/glob", `{"pattern":"nothing*"}`, 200, ""},
		{"cancel unknown", "POST", "/v1/cancel", `{"id":"call-none"}`, 200, ""},
		{"cancel empty id", "POST", "/v1/cancel", `{"id":""}`, 400, proto.CodeInvalid},
		{"cancel long id", "POST", "/v1/cancel", `{"id":"` + strings.Repeat("x", local.MaxCallID+1) + `"}`, 400, proto.CodeInvalid},
		{"cancel bad body", "POST", "/v1/cancel", `{"call":"x"}`, 400, proto.CodeInvalid},
		{"GET on cancel", "GET", "/v1/cancel", ``, 405, proto.CodeInvalid},
	} {
		a := send(t, tc.method, url+tc.path, []byte(tc.body), h...)
		if a.status != tc.status || a.err.Code != tc.code {
			t.Errorf("%s: %d %+v, want %d %q", tc.name, a.status, a.err, tc.status, tc.code)
		}
		switch tc.name {
		case "call without ledger":
			if a.body != `{"call_id":"call-9","state":"unknown"}` {
				t.Errorf("%s: %s", tc.name, a.body)
			}
		case "make_dir":
			if a.body != "{}" {
				t.Errorf("%s: %s", tc.name, a.body)
			}
		case "glob":
			if a.body != "[]" {
				t.Errorf("%s: %s", tc.name, a.body)
			}
		case "cancel unknown":
			if a.body != `{"stopped":false}` {
				t.Errorf("%s: %s", tc.name, a.body)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "big.txt")); err == nil {
		t.Error("the oversized write took effect")
	}
	if _, err := os.Lstat("/tmp/pwned"); err == nil {
		t.Error("an absolute write took effect")
	}
}

// Paths leaving the workspace are refused with 403, which the client turns
// into ErrPermission.
func TestConfinement(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"out": outside, "etc": "/etc", "up": ".."} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t, start(t, server.Config{Workspace: dir}))
	ctx := t.Context()
	for _, p := range []string{"..", "../x", "/etc/passwd", filepath.Join(outside, "secret.txt"), "out/secret.txt", "etc/passwd", "up/x", "a/../../x"} {
		_, err := c.ReadFile(ctx, contracts.ReadFileRequest{Path: p})
		if !errors.Is(err, contracts.ErrPermission) {
			t.Errorf("read %s: %v", p, err)
		}
		if err := c.WriteFile(ctx, contracts.WriteFileRequest{Path: p, Content: "pwned"}); !errors.Is(err, contracts.ErrPermission) {
			t.Errorf("write %s: %v", p, err)
		}
		if _, err := c.Exec(ctx, contracts.ExecRequest{Command: "true", Dir: p}); !errors.Is(err, contracts.ErrPermission) {
			t.Errorf("exec in %s: %v", p, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "s" {
		t.Errorf("outside file changed: %q, %v", b, err)
	}
}

// A command ignoring SIGTERM is killed with its whole process group at the
// timeout. The timeout is a real one, so on a slow machine it may strike
// before the shell has started its background process (bg.pid missing):
// then nothing was left to kill, and the test tries again with twice the
// timeout, rather than depending on how fast the shell starts.
func TestExecTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	c := client(t, start(t, server.Config{Workspace: dir}))
	for timeout := 500 * time.Millisecond; ; timeout *= 2 {
		res, err := c.Exec(t.Context(), contracts.ExecRequest{
			Command: "trap '' TERM; sleep 100000 & echo $! > bg.pid; sleep 100000",
			Timeout: timeout,
		})
		if err != nil || !res.TimedOut || res.ExitCode != -1 {
			t.Fatalf("got %+v, %v; want a timed-out result", res, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "bg.pid"))
		if errors.Is(err, os.ErrNotExist) && timeout < time.Minute {
			t.Logf("timed out after %s before the background process started: again", timeout)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("bg.pid %q: %v", b, err)
		}
		if !sandboxtest.Exits(t, pid) {
			t.Errorf("background process %d survived the timeout", pid)
		}
		return
	}
}

func TestExecOutputCapped(t *testing.T) {
	c := client(t, start(t, server.Config{Workspace: t.TempDir(), Sandbox: local.Options{OutputCap: 1000}}))
	res, err := c.Exec(t.Context(), contracts.ExecRequest{Command: "head -c 5000000 /dev/zero | tr '\\0' x", Timeout: time.Minute})
	if err != nil || !res.Truncated || len(res.Stdout) > 1100 || !strings.HasPrefix(res.Stdout, "xxxx") {
		t.Errorf("got %d bytes, truncated %v, %v", len(res.Stdout), res.Truncated, err)
	}
}

// None of the runtime's variables, nor sandboxd's own, reach a command.
func TestExecEnvScrubbed(t *testing.T) {
	env := []string{
		"PATH=" + os.Getenv("PATH"), "VISIBLE=yes",
		"AWS_SECRET_ACCESS_KEY=leak-aws", "CAIRN_X=leak-cairn", "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken),
		"sandboxd_other=leak-lower", "FOO_API_KEY=leak-key", "GH_TOKEN=leak-gh",
	}
	c := client(t, start(t, server.Config{Workspace: t.TempDir(), Sandbox: local.Options{Env: env}}))
	res, err := c.Exec(t.Context(), contracts.ExecRequest{Command: "env"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stdout, "VISIBLE=yes\n") {
		t.Errorf("env lacks VISIBLE:\n%s", res.Stdout)
	}
	for _, bad := range []string{"leak", "AWS_", "CAIRN_", "SANDBOXD", "sandboxd_", "API_KEY", tokenHash(testToken)} {
		if strings.Contains(res.Stdout, bad) {
			t.Errorf("command sees %q:\n%s", bad, res.Stdout)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]server.Config{
		"no workspace":  {TokenSHA256: tokenHash(testToken)},
		"no token hash": {Workspace: t.TempDir()},
		"short hash":    {Workspace: t.TempDir(), TokenSHA256: "abcd"},
		"not hex":       {Workspace: t.TempDir(), TokenSHA256: strings.Repeat("zz", 32)},
		"raw token":     {Workspace: t.TempDir(), TokenSHA256: testToken},
	} {
		if _, err := server.New(cfg); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
