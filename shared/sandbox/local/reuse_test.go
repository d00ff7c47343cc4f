package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A session's next Acquire reuses its sandbox while the workspace is the
// directory it was placed in, and places it again when that directory is
// gone or replaced, the limits differ, or the session was released: a
// reused sandbox never writes where the workspace no longer is.
func TestProviderReusesAPlacedSandbox(t *testing.T) {
	ctx := t.Context()
	base := t.TempDir()
	p := NewProvider(base, Options{})
	ws := filepath.Join(base, "sess-01")
	first, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{Kind: "local"})
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Error("the second Acquire placed the sandbox again")
	}
	other, err := p.Acquire(ctx, "sess-02", contracts.SandboxSpec{})
	if err != nil || other == first {
		t.Fatalf("another session's Acquire: %v, the same sandbox %v", err, other == first)
	}

	// The workspace removed and made again (as a user might): a new
	// sandbox, writing into the new directory.
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	replaced, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if replaced == first {
		t.Fatal("a replaced workspace reused the sandbox of the directory removed")
	}
	if err := replaced.WriteFile(ctx, contracts.WriteFileRequest{Path: "new.txt", Content: "n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err != nil {
		t.Errorf("the write did not land in the workspace: %v", err)
	}

	// Removed and not made again: Acquire makes it, as the first did.
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	made, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil || made == replaced {
		t.Fatalf("Acquire of a removed workspace: %v, reused %v", err, made == replaced)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		t.Fatalf("the workspace was not made again: %v", err)
	}

	// A symlink put in its place, to a directory elsewhere: placed again,
	// at what the link resolves to.
	elsewhere := t.TempDir()
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, ws); err != nil {
		t.Fatal(err)
	}
	linked, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil || linked == made {
		t.Fatalf("Acquire through a new symlink: %v, reused %v", err, linked == made)
	}

	// Other limits: another sandbox (they bound its commands).
	limited, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{Limits: contracts.SandboxLimits{Pids: 64}})
	if err != nil || limited == linked {
		t.Fatalf("Acquire with other limits: %v, reused %v", err, limited == linked)
	}

	// Released: its MCP servers stopped, so its sandbox is not handed out.
	if err := p.Release(ctx, "sess-01"); err != nil {
		t.Fatal(err)
	}
	after, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{Limits: contracts.SandboxLimits{Pids: 64}})
	if err != nil || after == limited {
		t.Fatalf("Acquire after Release: %v, reused %v", err, after == limited)
	}
}

// A sandbox is kept for reuse with the directory it holds open, not what
// its path names when it is kept: a workspace replaced between the two is
// placed again at the next Acquire.
func TestProviderKeepsTheDirectoryItHolds(t *testing.T) {
	base := t.TempDir()
	p := NewProvider(base, Options{})
	ws := filepath.Join(base, "sess-01")
	l, err := New(ws, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.mcp = map[string]*mcpHost{"sess-01": l.mcp}
	p.mu.Unlock()
	if err := os.RemoveAll(ws); err != nil { // replaced after New opened it, before keep
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	p.keep("sess-01", l, contracts.SandboxLimits{}, l)
	if api, ok := p.reuse("sess-01", ws, contracts.SandboxLimits{}); ok {
		t.Fatalf("reused a sandbox holding the removed directory (%p)", api)
	}
}

// An Acquire whose MCP servers a Release stopped while it placed the
// sandbox does not keep it: the next Acquire starts servers anew.
func TestProviderDoesNotKeepASandboxReleasedWhilePlaced(t *testing.T) {
	ctx := t.Context()
	base := t.TempDir()
	p, err := NewProviderAs(base, Options{}, "self") // its sandboxes are *Sandbox, as root too
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(filepath.Join(base, "sess-01"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.mcp = map[string]*mcpHost{"sess-01": l.mcp} // as Acquire registers it
	p.mu.Unlock()
	if err := p.Release(ctx, "sess-01"); err != nil { // the race: Release before keep
		t.Fatal(err)
	}
	p.keep("sess-01", l, contracts.SandboxLimits{}, l)
	next, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if next == contracts.SandboxAPI(l) {
		t.Fatal("the next Acquire reused the sandbox whose MCP servers were stopped")
	}
	next.(*Sandbox).mcp.mu.Lock()
	closed := next.(*Sandbox).mcp.closed
	next.(*Sandbox).mcp.mu.Unlock()
	if closed {
		t.Error("the next Acquire's MCP host is closed")
	}
}

// A workspace reached through a symlink whose directory was moved, and a
// new directory made where it resolved to: the sandbox is placed again, so
// its commands run in the workspace (they run at the resolved path), not in
// the directory that took that path.
func TestProviderReplacesASandboxWhoseCommandsWouldRunElsewhere(t *testing.T) {
	ctx := t.Context()
	base, other := t.TempDir(), t.TempDir()
	a, b := filepath.Join(other, "A"), filepath.Join(other, "B")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "sess-01")
	if err := os.Symlink(a, ws); err != nil {
		t.Fatal(err)
	}
	p, err := NewProviderAs(base, Options{Env: []string{"PATH=" + os.Getenv("PATH")}}, "self")
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return os.Rename(a, b) },
		func() error { return os.Remove(ws) },
		func() error { return os.Symlink(b, ws) },
		func() error { return os.Mkdir(a, 0o755) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	again, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if again == first {
		t.Error("reused the sandbox whose resolved path now names another directory")
	}
	if _, err := again.Exec(ctx, contracts.ExecRequest{Command: "echo x > by_exec.txt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b, "by_exec.txt")); err != nil {
		t.Errorf("the command did not run in the workspace: %v", err)
	}
}

// A reused sandbox whose call ledger directory was removed makes it again
// at its next mutating call.
func TestReusedSandboxRemakesItsLedger(t *testing.T) {
	ctx := t.Context()
	base := t.TempDir()
	p, err := NewProviderAs(base, Options{}, "self")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "a.txt", Content: "a", CallID: "call-1"}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(base, stateDir, "sess-01")); err != nil {
		t.Fatal(err)
	}
	again, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil || again != sb {
		t.Fatalf("Acquire: %v, reused %v", err, again == sb)
	}
	if err := again.WriteFile(ctx, contracts.WriteFileRequest{Path: "b.txt", Content: "b", CallID: "call-2"}); err != nil {
		t.Errorf("a mutating call after the ledger was removed: %v", err)
	}
}
