package placement_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// The model must never be left believing files exist that are gone. The
// tools phase skips SaveWorkspace when the sandbox went away during the
// step (turn/tools.go: `mutated && !gone`), and releases it. If that was
// the session's first sandbox — no snapshot yet, no snapshot error — the
// next sandbox starts empty with no notice at all, although an earlier
// call of that step (or of an earlier step whose snapshot was never
// attempted) wrote files the model was told were written.
func TestAttackFirstSandboxLostBeforeAnySnapshotIsSaid(t *testing.T) {
	ctx := context.Background()
	m, blobs := newMem("s"), &memBlobs{}
	a := ephemeral(t, m, blobs)
	sb, err := a.Acquire(ctx, "s", ephemeralSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "f", Content: "written, and the model was told so"}); err != nil {
		t.Fatal(err)
	}
	// A later call of the same step finds the sandbox gone: no snapshot is
	// attempted, the sandbox is released.
	s, _ := m.GetSession(ctx, "s")
	if _, err := placement.Replace(ctx, m, "s", s.Sandbox, placement.Released(s.Sandbox)); err != nil {
		t.Fatal(err)
	}
	sb2, err := a.Acquire(ctx, "s", ephemeralSpec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb2.ReadFile(ctx, contracts.ReadFileRequest{Path: "f"}); err == nil {
		t.Fatal("the file survived (unexpected: no snapshot was taken)")
	}
	if n := durableOf(t, sb2).WorkspaceNotice(); !strings.Contains(n, "lost") {
		t.Fatalf("the workspace was lost and the notice is %q: the model is not told", n)
	}
}

// A snapshot error followed by a successful restore of an older snapshot
// says both; a restore that fails says lost, never restored.
func TestAttackRestoreOfDeletedManifestSaysLost(t *testing.T) {
	ctx := context.Background()
	m, blobs := newMem("s"), &memBlobs{}
	a := ephemeral(t, m, blobs)
	sb, err := a.Acquire(ctx, "s", ephemeralSpec)
	if err != nil {
		t.Fatal(err)
	}
	sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "f", Content: "x"})
	if err := durableOf(t, sb).SaveWorkspace(ctx); err != nil {
		t.Fatal(err)
	}
	for k := range blobs.m {
		if strings.Contains(k, "/snapshot/") {
			delete(blobs.m, k)
		}
	}
	s, _ := m.GetSession(ctx, "s")
	placement.Replace(ctx, m, "s", s.Sandbox, placement.Released(s.Sandbox))
	// A fresh acquirer: no manifest cached in memory.
	a2 := ephemeral(t, m, blobs)
	sb2, err := a2.Acquire(ctx, "s", ephemeralSpec)
	if err != nil {
		t.Fatal(err)
	}
	n := durableOf(t, sb2).WorkspaceNotice()
	if !strings.Contains(n, "lost") || strings.Contains(n, "was restored") {
		t.Fatalf("notice %q", n)
	}
	t.Logf("notice: %s", n)
}
