package local

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/conformance/sandboxtest"
)

// skipUnlessRoot skips a test of the switch of user: only root switches
// (CI runs as root, so these run there).
func skipUnlessRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the local Provider runs commands as another user only when this process runs as root (CI runs as root)")
	}
}

// uidOf is the owner of path (not following a final symlink).
func uidOf(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// A run-as setting: uid:gid numbers, self, or the default (nobody for
// root, self otherwise); another user needs root.
func TestRunAs(t *testing.T) {
	for _, c := range []struct {
		value string
		euid  int
		want  *syscall.Credential
		bad   bool
	}{
		{"", 0, &syscall.Credential{Uid: 65534, Gid: 65534}, false},
		{"", 1000, nil, false},
		{"self", 0, nil, false},
		{"self", 1000, nil, false},
		{"10001:10002", 0, &syscall.Credential{Uid: 10001, Gid: 10002}, false},
		{"0:0", 0, nil, false},
		{"1000:1000", 1000, nil, false},
		{"10001:10001", 1000, nil, true},
		{"nobody", 0, nil, true},
		{"1:", 0, nil, true},
		{"-1:-1", 0, nil, true},
		{"4294967296:1", 0, nil, true},
	} {
		got, err := RunAs(c.value, c.euid)
		if c.bad {
			if !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("RunAs(%q, %d) = %+v, %v; want ErrInvalid", c.value, c.euid, got, err)
			}
			continue
		}
		if err != nil || (got == nil) != (c.want == nil) || (got != nil && (got.Uid != c.want.Uid || got.Gid != c.want.Gid || len(got.Groups) != 0 || got.NoSetGroups)) {
			t.Errorf("RunAs(%q, %d) = %+v, %v; want %+v", c.value, c.euid, got, err, c.want)
		}
	}
	if _, err := NewProviderAs(t.TempDir(), Options{}, "nobody"); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("NewProviderAs(nobody): %v, want ErrInvalid", err)
	}
}

// dataDir makes a runtime data directory as the embedded backend does
// (0700, DATA/sandboxes 0711, a 0600 sandbox.key) and returns it with a
// provider of its sandboxes.
func dataDir(t *testing.T, runAs string) (string, *Provider) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "sandbox.key"), []byte("the sandbox key"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := NewProviderAs(filepath.Join(data, "sandboxes"), Options{Env: []string{"PATH=" + os.Getenv("PATH")}}, runAs)
	if err != nil {
		t.Fatal(err)
	}
	return data, p
}

// As root, the Provider runs commands as nobody: `id -u` prints 65534
// (no supplementary group), a command reads neither DATA/sandbox.key nor
// the ledger, cannot list the ledger or the other sessions, nor write a
// record; it can change a file write_file wrote (and make_dir made), and
// Remove removes what it made. The ledger keeps working.
func TestProviderAsRootRunsCommandsAsNobody(t *testing.T) {
	skipUnlessRoot(t)
	ctx := t.Context()
	data, p := dataDir(t, "")
	api, err := p.Acquire(ctx, "ses_a", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := api.(contracts.CallLedger); !ok {
		t.Fatalf("the sandbox (%T) lost its ledger", api)
	}
	if err := api.WriteFile(ctx, contracts.WriteFileRequest{Path: "dir/tool.txt", Content: "from the tool\n", CallID: "call-w"}); err != nil {
		t.Fatal(err)
	}
	if err := api.MakeDir(ctx, "made/by/tool"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.EditFile(ctx, contracts.EditFileRequest{Path: "dir/tool.txt", Old: "tool", New: "write_file tool", CallID: "call-e"}); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(data, "sandboxes", "ses_a")
	state := filepath.Join(data, "sandboxes", ".state")
	res, err := api.Exec(ctx, contracts.ExecRequest{CallID: "call-x", Command: `
echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
echo more >> dir/tool.txt && echo APPENDED
touch made/by/tool/cmd.txt && echo MADE
mkdir -p cmd/deep && echo x > cmd/deep/f && echo CMDFILES
cat ` + data + `/sandbox.key 2>/dev/null && echo KEY
ls ` + data + ` >/dev/null 2>&1 && echo LISTED_DATA
ls ` + data + `/sandboxes >/dev/null 2>&1 && echo LISTED_SESSIONS
ls ` + state + ` >/dev/null 2>&1 && echo LISTED_LEDGER
cat ` + state + `/ses_a/calls/* >/dev/null 2>&1 && echo READ_LEDGER
echo '{"forged":true}' > ` + state + `/ses_a/calls/call-forged.json 2>/dev/null && echo FORGED
true`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stdout, "uid=65534 gid=65534 groups=65534\n") {
		t.Errorf("command identity: %q, want nobody with no other group", res.Stdout)
	}
	for _, want := range []string{"APPENDED", "MADE", "CMDFILES"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("the command could not change the workspace (%s): %+v", want, res)
		}
	}
	for _, bad := range []string{"KEY", "LISTED_DATA", "LISTED_SESSIONS", "LISTED_LEDGER", "READ_LEDGER", "FORGED"} {
		if strings.Contains(res.Stdout, bad) {
			t.Errorf("the command reached the runtime's files: %s\n%s", bad, res.Stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "ses_a", "calls", "call-forged.json")); !os.IsNotExist(err) {
		t.Errorf("a forged record exists: %v", err)
	}
	for _, id := range []string{"call-w", "call-e", "call-x"} {
		if o, err := api.(contracts.CallLedger).CallOutcome(ctx, id); err != nil || o.State != contracts.CallDone {
			t.Errorf("the ledger itself works: %s: %+v, %v", id, o, err)
		}
	}
	if got, err := api.ReadFile(ctx, contracts.ReadFileRequest{Path: "dir/tool.txt"}); err != nil || got.Content != "from the write_file tool\nmore\n" {
		t.Errorf("read back %+v, %v", got, err)
	}
	for _, rel := range []string{"", "dir", "dir/tool.txt", "made", "made/by/tool", "cmd/deep/f"} {
		if uid := uidOf(t, filepath.Join(ws, rel)); uid != 65534 {
			t.Errorf("%s belongs to uid %d, want 65534", filepath.Join("ses_a", rel), uid)
		}
	}
	// The directories above the workspace are searchable, never listable
	// by others; the ledger is root's alone.
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{data, 0o701}, {filepath.Join(data, "sandboxes"), 0o711}, {state, 0o700}, {filepath.Join(data, "sandbox.key"), 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil || fi.Mode().Perm() != c.mode || fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("%s: %v, %v; want root's, mode %v", c.path, fi.Mode(), err, c.mode)
		}
	}
	for _, rel := range []string{"cmd", "made", "dir/tool.txt"} {
		if err := api.Remove(ctx, rel, true); err != nil {
			t.Errorf("Remove(%s): %v", rel, err)
		}
		if _, err := os.Lstat(filepath.Join(ws, rel)); !os.IsNotExist(err) {
			t.Errorf("%s after Remove: %v", rel, err)
		}
	}
}

// Files already in a workspace (written as root before this provider's
// first Acquire: an older cairn, a test) are given to the commands' user;
// a symlink and a file with another hard link are not followed out of the
// workspace: the secret they name stays root's.
func TestProviderGivesTheWorkspaceOnce(t *testing.T) {
	skipUnlessRoot(t)
	ctx := t.Context()
	data, p := dataDir(t, "")
	ws := filepath.Join(data, "sandboxes", "ses_b")
	if err := os.MkdirAll(filepath.Join(ws, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "old", "root.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(data, "sandbox.key")
	if err := os.Symlink(key, filepath.Join(ws, "key-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(key, filepath.Join(ws, "key-hard")); err != nil {
		t.Fatal(err)
	}
	api, err := p.Acquire(ctx, "ses_b", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := api.Exec(ctx, contracts.ExecRequest{Command: "echo new >> old/root.txt && echo CHANGED; cat key-link key-hard 2>/dev/null && echo KEY; true"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stdout, "CHANGED") || strings.Contains(res.Stdout, "KEY") {
		t.Errorf("command output %+v: want the old file changed, the key unread", res)
	}
	if uid := uidOf(t, key); uid != 0 {
		t.Errorf("sandbox.key was given to uid %d", uid)
	}
	if uid := uidOf(t, filepath.Join(ws, "key-link")); uid != 65534 {
		t.Errorf("the symlink itself belongs to uid %d, want 65534", uid)
	}
	// write_file refuses the linked name; make_dir on a path through the
	// symlink does not chown its target either.
	if err := api.WriteFile(ctx, contracts.WriteFileRequest{Path: "key-hard", Content: "x"}); err == nil {
		t.Error("write_file wrote through a hard link")
	}
	_ = api.MakeDir(ctx, "key-link")
	if uid := uidOf(t, key); uid != 0 {
		t.Errorf("sandbox.key was given to uid %d", uid)
	}
}

// CAIRN_SANDBOX_RUN_AS=self (NewProviderAs "self") keeps the commands as
// this process's user: root here.
func TestProviderRunAsSelf(t *testing.T) {
	skipUnlessRoot(t)
	_, p := dataDir(t, "self")
	api, err := p.Acquire(t.Context(), "ses_c", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := api.(*Sandbox); !ok {
		t.Errorf("self: the sandbox is a %T, want the plain *Sandbox", api)
	}
	res, err := api.Exec(t.Context(), contracts.ExecRequest{Command: "id -u"})
	if err != nil || res.Stdout != "0\n" {
		t.Errorf("id -u: %+v, %v; want 0", res, err)
	}
}

// The conformance suite against the Provider's sandboxes: as root the
// suite's commands run as nobody in a workspace given to it.
func TestConformanceProvider(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) (contracts.SandboxAPI, string) {
		base := t.TempDir()
		api, err := NewProvider(base, Options{Env: os.Environ()}).Acquire(t.Context(), "ses_conf", contracts.SandboxSpec{})
		if err != nil {
			t.Fatal(err)
		}
		return api, filepath.Join(base, "ses_conf")
	})
}

// A program name is resolved as the commands' user would: a directory of
// PATH it cannot reach (pyenv's shims under /root), or a file it may not
// execute, is passed over for the next PATH entry.
func TestLookPathAs(t *testing.T) {
	hidden := filepath.Join(t.TempDir(), "hidden")
	open := filepath.Join(t.TempDir(), "open")
	noexec := filepath.Join(t.TempDir(), "noexec")
	for dir, mode := range map[string]os.FileMode{hidden: 0o700, open: 0o755, noexec: 0o755} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fileMode := os.FileMode(0o755)
		if dir == noexec {
			fileMode = 0o644
		}
		if err := os.WriteFile(filepath.Join(dir, "prog"), []byte("#!/bin/sh\n"), fileMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := Searchable(dir); err != nil {
			t.Fatal(err)
		}
	}
	c := &syscall.Credential{Uid: 65534, Gid: 65534}
	env := []string{"PATH=" + hidden + ":" + noexec + ":relative:" + open}
	if got := lookPathAs("prog", env, c); got != filepath.Join(open, "prog") {
		t.Errorf("lookPathAs(prog) = %q, want the one in %s", got, open)
	}
	if got := lookPathAs("missing", env, c); got != "missing" {
		t.Errorf("lookPathAs(missing) = %q, want it unresolved", got)
	}
	if got := lookPathAs("./prog", env, c); got != "./prog" {
		t.Errorf("lookPathAs(./prog) = %q, want it as is", got)
	}
}
