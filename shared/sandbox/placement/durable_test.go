package placement_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// memBlobs is an in-memory BlobStore that can be made to fail.
type memBlobs struct {
	mu   sync.Mutex
	m    map[string][]byte
	fail error
}

func (b *memBlobs) PutBlob(_ context.Context, key string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	if b.m == nil {
		b.m = map[string][]byte{}
	}
	if _, ok := b.m[key]; !ok {
		b.m[key] = data
	}
	return nil
}

func (b *memBlobs) GetBlob(_ context.Context, key string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d, ok := b.m[key]; ok {
		return d, nil
	}
	return nil, contracts.ErrNotFound
}

// ephemeral is an Acquirer whose every sandbox is a fresh local directory
// (its disk dies with it) and whose recorded sandboxes are always dead.
func ephemeral(t *testing.T, m *memSessions, blobs *memBlobs) *placement.Acquirer {
	n := 0
	return &placement.Acquirer{
		Kind: "process", Sessions: m, Locks: &placement.Locks{},
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		IDKey: "sandbox_id", RecordedMsg: "sandbox started",
		Reuse: func(context.Context, string, *contracts.SandboxRecord, string) (contracts.SandboxAPI, error) {
			return nil, nil
		},
		Start: func(ctx context.Context, sessionID string, spec contracts.SandboxSpec, fp string) (placement.Started, error) {
			n++
			sb, err := local.New(t.TempDir(), local.Options{})
			if err != nil {
				return placement.Started{}, err
			}
			r := rec(fmt.Sprintf("box-%d", n))
			r.Fingerprint = fp
			return placement.Started{Sandbox: sb, Record: r, Stop: func(context.Context) {}}, nil
		},
		Snapshots: &snapshot.Store{Blobs: blobs, Now: func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }},
		Durable:   func(s contracts.SandboxSpec) bool { return s.Workspace == contracts.WorkspaceEphemeral },
	}
}

var ephemeralSpec = contracts.SandboxSpec{Kind: "process", Workspace: contracts.WorkspaceEphemeral}

func durableOf(t *testing.T, sb contracts.SandboxAPI) contracts.DurableWorkspace {
	t.Helper()
	dw, ok := sb.(contracts.DurableWorkspace)
	if !ok {
		t.Fatalf("%T is not a durable workspace", sb)
	}
	if _, ok := sb.(contracts.CallLedger); !ok {
		t.Fatalf("%T hides the sandbox's call ledger", sb)
	}
	return dw
}

func TestDurableWorkspaceRestoredAfterRelease(t *testing.T) {
	ctx := context.Background()
	m, blobs := newMem("s"), &memBlobs{}
	a := ephemeral(t, m, blobs)
	sb, err := a.Acquire(ctx, "s", ephemeralSpec)
	if err != nil {
		t.Fatal(err)
	}
	if n := durableOf(t, sb).WorkspaceNotice(); n != "" {
		t.Fatalf("a first sandbox has a notice: %q", n)
	}
	if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "a/f.txt", Content: "kept"}); err != nil {
		t.Fatal(err)
	}
	if err := durableOf(t, sb).SaveWorkspace(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := m.GetSession(ctx, "s")
	snap := s.Sandbox.Workspace.Snapshot
	if snap == nil || snap.Files != 1 || snap.Bytes != 4 {
		t.Fatalf("recorded workspace %+v", s.Sandbox.Workspace)
	}
	updates := m.updates
	if err := durableOf(t, sb).SaveWorkspace(ctx); err != nil || m.updates != updates {
		t.Fatalf("an unchanged workspace wrote the session (%d writes): %v", m.updates-updates, err)
	}

	// Released (the sandbox was unreachable): the record keeps only the
	// workspace state, and the next sandbox is restored from it.
	if _, err := placement.Replace(ctx, m, "s", s.Sandbox, placement.Released(s.Sandbox)); err != nil {
		t.Fatal(err)
	}
	s, _ = m.GetSession(ctx, "s")
	if placement.Running(s.Sandbox) || s.Sandbox.Workspace.Snapshot.ID != snap.ID {
		t.Fatalf("released record %+v", s.Sandbox)
	}
	sb2, err := a.Acquire(ctx, "s", ephemeralSpec)
	if err != nil {
		t.Fatal(err)
	}
	notice := durableOf(t, sb2).WorkspaceNotice()
	if !strings.Contains(notice, "restored from the snapshot taken at 2026-12-01T12:00:00Z (1 files, 4 bytes)") {
		t.Fatalf("notice %q", notice)
	}
	got, err := sb2.ReadFile(ctx, contracts.ReadFileRequest{Path: "a/f.txt"})
	if err != nil || got.Content != "kept" {
		t.Fatalf("%+v %v", got, err)
	}
	if err := durableOf(t, sb2).NoticeGiven(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ = m.GetSession(ctx, "s"); s.Sandbox.Workspace.Notice != "" || s.Sandbox.ID != "box-2" {
		t.Fatalf("after the notice was given: %+v", s.Sandbox)
	}
}

func TestDurableWorkspaceLostIsSaid(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		break_ func(b *memBlobs)
		want   string
	}{
		{"no snapshot could be taken", func(b *memBlobs) { b.fail = errors.New("bucket unreachable") },
			"the workspace is lost: it starts empty, because there is no snapshot of the previous one (none could be taken: snapshotting workspace of session s: bucket unreachable)"},
		{"the snapshot cannot be read back", func(b *memBlobs) {
			for k := range b.m {
				if strings.Contains(k, "/chunk/") {
					delete(b.m, k)
				}
			}
		}, "the workspace is lost: restoring the snapshot taken at 2026-12-01T12:00:00Z failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, blobs := newMem("s"), &memBlobs{}
			a := ephemeral(t, m, blobs)
			sb, err := a.Acquire(ctx, "s", ephemeralSpec)
			if err != nil {
				t.Fatal(err)
			}
			if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "f", Content: "one"}); err != nil {
				t.Fatal(err)
			}
			if tc.name != "no snapshot could be taken" {
				if err := durableOf(t, sb).SaveWorkspace(ctx); err != nil {
					t.Fatal(err)
				}
			}
			tc.break_(blobs)
			if err := durableOf(t, sb).SaveWorkspace(ctx); err != nil && tc.name != "no snapshot could be taken" {
				t.Fatal(err)
			} else if err == nil && tc.name == "no snapshot could be taken" {
				t.Fatal("a snapshot into a failing store succeeded")
			}
			sb2, err := a.Acquire(ctx, "s", ephemeralSpec) // the recorded one is dead
			if err != nil {
				t.Fatal(err)
			}
			if n := durableOf(t, sb2).WorkspaceNotice(); !strings.Contains(n, tc.want) {
				t.Fatalf("notice %q, want %q", n, tc.want)
			}
		})
	}
}

// A spec the kind keeps on disk is not snapshotted: Acquire returns the
// sandbox itself.
func TestNonDurableSpecIsTheSandboxItself(t *testing.T) {
	ctx := context.Background()
	a := ephemeral(t, newMem("s"), &memBlobs{})
	sb, err := a.Acquire(ctx, "s", contracts.SandboxSpec{Kind: "process"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sb.(contracts.DurableWorkspace); ok {
		t.Fatalf("%T is durable", sb)
	}
}
