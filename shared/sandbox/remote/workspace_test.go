package remote_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// A workspace snapshotted from one sandboxd over HTTP, into the real SQLite
// blob store, is restored into another sandboxd: files written through the
// API and by a command come back, and the second snapshot of an unchanged
// workspace is the same one.
func TestWorkspaceSnapshotBetweenSandboxds(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "blobs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	snaps := &snapshot.Store{Blobs: store}

	first := newClient(t, serve(t, server.Config{Workspace: t.TempDir(), StateDir: t.TempDir()}), remote.Options{})
	if err := first.WriteFile(ctx, contracts.WriteFileRequest{Path: "src/main.go", Content: "package main\n"}); err != nil {
		t.Fatal(err)
	}
	if res, err := first.Exec(ctx, contracts.ExecRequest{Command: `mkdir -p out && printf '#!/bin/sh\necho built\n' > out/bin && chmod 755 out/bin && ln -s out/bin run`}); err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	snap, err := snaps.Save(ctx, first, "ses_ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Files != 2 {
		t.Fatalf("snapshot %+v", snap)
	}

	ws2 := t.TempDir()
	second := newClient(t, serve(t, server.Config{Workspace: ws2, StateDir: t.TempDir()}), remote.Options{})
	if _, err := snaps.Restore(ctx, second, "ses_ws", *snap); err != nil {
		t.Fatal(err)
	}
	got, err := second.ReadFile(ctx, contracts.ReadFileRequest{Path: "src/main.go"})
	if err != nil || got.Content != "package main\n" {
		t.Fatalf("%+v %v", got, err)
	}
	if res, err := second.Exec(ctx, contracts.ExecRequest{Command: "./run"}); err != nil || strings.TrimSpace(res.Stdout) != "built" {
		t.Fatalf("the restored executable through its symlink: %+v %v", res, err)
	}
	again, err := snaps.Save(ctx, second, "ses_ws", snap)
	if err != nil || again != snap {
		t.Fatalf("the restored workspace is another snapshot: %+v %v", again, err)
	}
}

// The workspace routes need the token like every other route; an import
// that is not a tar, or names a path outside the workspace, writes nothing.
func TestWorkspaceRoutesRefuseStrangersAndBadStreams(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	endpoint := serve(t, server.Config{Workspace: ws})
	stranger, err := remote.New(endpoint, "not-the-token", remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.ExportWorkspace(ctx, nil, "", func(io.Reader) error { return nil }); !errors.Is(err, contracts.ErrPermission) && !strings.Contains(err.Error(), "unauthorized") {
		t.Fatalf("export without the token: %v", err)
	}
	if _, err := stranger.ImportWorkspace(ctx, strings.NewReader("")); err == nil {
		t.Fatal("import without the token succeeded")
	}

	c := newClient(t, endpoint, remote.Options{})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "ok", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.WriteHeader(&tar.Header{Name: "../escaped", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	if _, err := c.ImportWorkspace(ctx, &buf); !errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("an import escaping the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "escaped")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the import wrote outside the workspace: %v", err)
	}
	if _, err := c.ImportWorkspace(ctx, strings.NewReader("not a tar at all, just text")); !errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("an import that is no tar: %v", err)
	}
}
