package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

// reachableDir is a workspace every user can reach (a command running as
// nobody enters it after its switch of user; t.TempDir's parents are 0700).
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sandboxd-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "workspace")
}

// As root, sandboxd runs commands as nobody (SANDBOXD_RUN_AS unset): a
// command's uid is not 0, it cannot list or read the call ledger nor write
// a record into it, and it can change the files a tool wrote into the
// workspace.
func TestRootRunsCommandsAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: sandboxd switches user only as root")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ws, state := reachableDir(t), filepath.Join(t.TempDir(), "state")
	environ := []string{"PATH=" + os.Getenv("PATH"), "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken)}
	url, code := runMain(t, ctx, []string{"--addr", "127.0.0.1:0", "--workspace", ws, "--state", state}, environ)
	c := client(t, url)
	if err := c.WriteFile(t.Context(), contracts.WriteFileRequest{Path: "dir/tool.txt", Content: "from the tool\n", CallID: "call-w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(t.Context(), contracts.ExecRequest{Command: "true", CallID: "call-first"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(t.Context(), contracts.ExecRequest{Command: `
echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
echo more >> dir/tool.txt && echo appended
ls ` + state + ` >/dev/null 2>&1 && echo LISTED
cat ` + state + `/* >/dev/null 2>&1 && echo READ
echo '{"forged":true}' > ` + state + `/call-forged.json 2>/dev/null && echo FORGED
true`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stdout, "uid=65534 gid=65534 groups=65534\n") {
		t.Errorf("command identity: %q, want nobody with no other group", res.Stdout)
	}
	if !strings.Contains(res.Stdout, "appended") {
		t.Errorf("the command cannot change a file the tool wrote: %+v", res)
	}
	for _, bad := range []string{"LISTED", "READ", "FORGED"} {
		if strings.Contains(res.Stdout, bad) {
			t.Errorf("the command could reach the ledger: %s\n%s", bad, res.Stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "call-forged.json")); !os.IsNotExist(err) {
		t.Errorf("a forged record exists: %v", err)
	}
	if o, err := c.CallOutcome(t.Context(), "call-first"); err != nil || o.State != contracts.CallDone {
		t.Errorf("the ledger itself still works: %+v, %v", o, err)
	}
	if got, err := c.ReadFile(t.Context(), contracts.ReadFileRequest{Path: "dir/tool.txt"}); err != nil || got.Content != "from the tool\nmore\n" {
		t.Errorf("read back %+v, %v", got, err)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit %d", got)
	}
}

// SANDBOXD_RUN_AS is checked at start: a malformed value, or another user
// without root, refuses to start.
func TestRunAsRefused(t *testing.T) {
	bad := []string{"SANDBOXD_RUN_AS=nobody"}
	if os.Geteuid() != 0 {
		bad = append(bad, "SANDBOXD_RUN_AS=0:0")
	}
	for _, kv := range bad {
		var out, errOut strings.Builder
		args := []string{"--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--state", t.TempDir()}
		environ := []string{kv, "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken)}
		if got := runRefused(t, args, environ, &out, &errOut); got != 2 || !strings.Contains(errOut.String(), "SANDBOXD_RUN_AS") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming SANDBOXD_RUN_AS", kv, got, errOut.String())
		}
	}
}

func runRefused(t *testing.T, args, environ []string, out, errOut *strings.Builder) int {
	t.Helper()
	return server.Main(t.Context(), args, environ, out, errOut)
}
