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
