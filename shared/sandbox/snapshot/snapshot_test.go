package snapshot_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// blobs is an in-memory contracts.BlobStore counting puts.
type blobs struct {
	mu   sync.Mutex
	m    map[string][]byte
	puts int
}

func (b *blobs) PutBlob(_ context.Context, key string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string][]byte{}
	}
	if _, ok := b.m[key]; !ok {
		b.m[key] = append([]byte(nil), data...)
		b.puts++
	}
	return nil
}

func (b *blobs) GetBlob(_ context.Context, key string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.m[key]
	if !ok {
		return nil, contracts.ErrNotFound
	}
	return d, nil
}

// dirSandbox exports and imports a directory the way local.Sandbox does,
// counting the chunks each export sends.
type dirSandbox struct {
	root  *os.Root
	cache snapshot.Cache
	lim   snapshot.Limits
	sent  int  // chunks the last export sent
	full  bool // whether it sent a manifest
}

func newDir(t *testing.T) (*dirSandbox, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &dirSandbox{root: r}, dir
}

func (d *dirSandbox) ExportWorkspace(ctx context.Context, have []string, since string, read func(io.Reader) error) error {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var buf bytes.Buffer
	if err := snapshot.Export(ctx, d.root, func(s string) bool { return set[s] }, since, &d.cache, d.lim, &buf); err != nil {
		return err
	}
	d.sent, d.full = countChunks(buf.Bytes())
	return read(&buf)
}

func (d *dirSandbox) ImportWorkspace(ctx context.Context, r io.Reader) (int, error) {
	return snapshot.Import(ctx, d.root, r, nil)
}

func countChunks(stream []byte) (n int, manifest bool) {
	tr := tar.NewReader(bytes.NewReader(stream))
	for {
		h, err := tr.Next()
		if err != nil {
			return n, manifest
		}
		if strings.HasPrefix(h.Name, "chunk/") {
			n++
		}
		manifest = manifest || h.Name == "manifest.json"
	}
}

func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestSaveRestoreKeepsTreeModesTimesAndLinks(t *testing.T) {
	ctx := context.Background()
	src, dir := newDir(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), (2*snapshot.ChunkSize+100)/16) // three chunks
	write(t, filepath.Join(dir, "a", "b", "big.bin"), big, 0o644)
	write(t, filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	write(t, filepath.Join(dir, "empty"), nil, 0o600)
	if err := os.Mkdir(filepath.Join(dir, "emptydir"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a/b/big.bin", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "outside")); err != nil { // kept as written, not followed
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "run.sh"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}

	st := &snapshot.Store{Blobs: &blobs{}, Now: func() time.Time { return old }}
	snap, err := st.Save(ctx, src, "ses_1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Files != 3 || snap.Bytes != int64(len(big))+int64(len("#!/bin/sh\necho hi\n")) || !snap.At.Equal(old) {
		t.Fatalf("snapshot %+v", snap)
	}

	dst, out := newDir(t)
	n, err := st.Restore(ctx, dst, "ses_1", *snap)
	if err != nil {
		t.Fatal(err)
	}
	if n != 8 { // a, a/b, a/b/big.bin, empty, emptydir, link, outside, run.sh (the fifo is left out)
		t.Fatalf("restored %d entries", n)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "a", "b", "big.bin")); !bytes.Equal(got, big) {
		t.Fatalf("big.bin: %d bytes back of %d", len(got), len(big))
	}
	fi, err := os.Stat(filepath.Join(out, "run.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 || !fi.ModTime().Equal(old) {
		t.Fatalf("run.sh: %v %v %v", fi.Mode(), fi.ModTime(), err)
	}
	if fi, err := os.Stat(filepath.Join(out, "emptydir")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Fatalf("emptydir: %v %v", fi, err)
	}
	for link, want := range map[string]string{"link": "a/b/big.bin", "outside": "/etc/passwd"} {
		if got, err := os.Readlink(filepath.Join(out, link)); err != nil || got != want {
			t.Fatalf("%s -> %q %v", link, got, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(out, "fifo")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a fifo was restored: %v", err)
	}

	// The restored tree snapshots to the same manifest as the source (the
	// fifo, left out, aside): nothing is lost or added by a round trip.
	if err := os.Remove(filepath.Join(dir, "fifo")); err != nil {
		t.Fatal(err)
	}
	want, err := st.Save(ctx, src, "ses_1", snap)
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.Save(ctx, dst, "ses_1", want)
	if err != nil || again != want {
		t.Fatalf("round trip changed the snapshot: %+v, want %+v (%v)", again, want, err)
	}
}

func TestSaveIsIncremental(t *testing.T) {
	ctx := context.Background()
	src, dir := newDir(t)
	big := bytes.Repeat([]byte("x"), 2*snapshot.ChunkSize+1)
	write(t, filepath.Join(dir, "big"), big, 0o644)
	write(t, filepath.Join(dir, "small"), []byte("one"), 0o644)
	bs := &blobs{}
	st := &snapshot.Store{Blobs: bs}
	first, err := st.Save(ctx, src, "ses_1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if src.sent != 3 { // the two identical full chunks of big are one chunk; big's tail; small
		t.Fatalf("first export sent %d chunks, want 3", src.sent)
	}

	puts := bs.puts
	same, err := st.Save(ctx, src, "ses_1", first)
	if err != nil || same != first || bs.puts != puts || src.sent != 0 || src.full {
		t.Fatalf("an unchanged workspace: %+v %v, %d new blobs, %d chunks sent, manifest sent %v", same, err, bs.puts-puts, src.sent, src.full)
	}

	write(t, filepath.Join(dir, "small"), []byte("two"), 0o644)
	next, err := st.Save(ctx, src, "ses_1", first)
	if err != nil || next.ID == first.ID {
		t.Fatalf("a changed file: %+v %v", next, err)
	}
	if src.sent != 1 || bs.puts != puts+2 { // one chunk and one manifest
		t.Fatalf("one changed file sent %d chunks and stored %d blobs", src.sent, bs.puts-puts)
	}
	// A second store (another process) reads the previous manifest from
	// the blobs and is incremental too.
	write(t, filepath.Join(dir, "small"), []byte("three"), 0o644)
	if _, err := (&snapshot.Store{Blobs: bs}).Save(ctx, src, "ses_1", next); err != nil || src.sent != 1 {
		t.Fatalf("another store: %v, %d chunks sent", err, src.sent)
	}
}

func TestSaveRefusesAWorkspaceOverTheLimitsBeforeSending(t *testing.T) {
	ctx := context.Background()
	src, dir := newDir(t)
	write(t, filepath.Join(dir, "f"), bytes.Repeat([]byte("x"), 2048), 0o644)
	write(t, filepath.Join(dir, "g"), []byte("y"), 0o644)
	st := &snapshot.Store{Blobs: &blobs{}}
	for _, lim := range []snapshot.Limits{{MaxBytes: 2048}, {MaxEntries: 1}} {
		src.lim = lim
		var buf bytes.Buffer
		err := snapshot.Export(ctx, src.root, func(string) bool { return false }, "", &src.cache, lim, &buf)
		if !errors.Is(err, contracts.ErrTooLarge) || !strings.Contains(err.Error(), "snapshot limit") || buf.Len() != 0 {
			t.Fatalf("limits %+v: %v, %d bytes written", lim, err, buf.Len())
		}
		if _, err := st.Save(ctx, src, "ses_1", nil); !errors.Is(err, contracts.ErrTooLarge) {
			t.Fatalf("Save over %+v: %v", lim, err)
		}
	}
}

func TestHardLinkedFilesAreLeftOut(t *testing.T) {
	ctx := context.Background()
	src, dir := newDir(t)
	outside := filepath.Join(t.TempDir(), "secret")
	write(t, outside, []byte("not yours"), 0o600)
	if err := os.Link(outside, filepath.Join(dir, "linked")); err != nil {
		t.Skipf("no hard links across these temp dirs: %v", err)
	}
	st := &snapshot.Store{Blobs: &blobs{}}
	src.lim.LinkOwner = 4242 // the commands' user is not the file's owner
	snap, err := st.Save(ctx, src, "ses_1", nil)
	if err != nil || snap.Files != 0 || snap.Skipped != 1 {
		t.Fatalf("another user's hard-linked file was snapshotted: %+v %v", snap, err)
	}
	// The commands' user's own hard-linked files (a pnpm store, a local
	// git clone) are kept, as copies: it could read them anyway.
	src.lim.LinkOwner = os.Geteuid()
	if snap, err = st.Save(ctx, src, "ses_1", snap); err != nil || snap.Files != 1 {
		t.Fatalf("the user's own hard-linked file was left out: %+v %v", snap, err)
	}
}

// A stream that does not add up stores no snapshot: a chunk whose content
// does not hash to its name, a manifest naming a chunk never sent.
type forged struct{ stream func(*tar.Writer) }

func (f forged) ExportWorkspace(_ context.Context, _ []string, _ string, read func(io.Reader) error) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	f.stream(tw)
	tw.Close()
	return read(&buf)
}

func entry(tw *tar.Writer, name string, data []byte) {
	tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(data)), Mode: 0o600, Typeflag: tar.TypeReg})
	tw.Write(data)
}

func TestSaveRefusesForgedStreams(t *testing.T) {
	ctx := context.Background()
	sum := snapshot.HashHex([]byte("real"))
	cases := map[string]func(*tar.Writer){
		"a chunk that lies": func(tw *tar.Writer) {
			entry(tw, "chunk/"+sum, []byte("fake"))
		},
		"a chunk never sent": func(tw *tar.Writer) {
			entry(tw, "manifest.json", []byte(`{"version":1,"entries":[{"path":"f","type":"file","mode":420,"size":4,"chunks":["`+sum+`"]}]}`))
		},
		"a path out of the workspace": func(tw *tar.Writer) {
			entry(tw, "manifest.json", []byte(`{"version":1,"entries":[{"path":"../f","type":"dir","mode":493}]}`))
		},
		"no manifest": func(tw *tar.Writer) {},
		"unchanged without a snapshot": func(tw *tar.Writer) {
			entry(tw, "unchanged", []byte(sum))
		},
		"an unknown entry": func(tw *tar.Writer) {
			entry(tw, "../../etc/passwd", []byte("x"))
		},
	}
	for name, stream := range cases {
		bs := &blobs{}
		_, err := (&snapshot.Store{Blobs: bs}).Save(ctx, forged{stream}, "ses_1", nil)
		if err == nil {
			t.Errorf("%s: saved", name)
		}
		for k := range bs.m {
			if strings.Contains(k, "/snapshot/") {
				t.Errorf("%s: a manifest was stored: %s", name, k)
			}
		}
	}
}

func TestImportStaysInTheWorkspace(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"../escape", "/abs", "a/../../b", "."} {
		dst, _ := newDir(t)
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		entry(tw, name, []byte("x"))
		tw.Close()
		if _, err := dst.ImportWorkspace(ctx, &buf); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%q: %v", name, err)
		}
	}
	// A symlink in the workspace pointing out is replaced, not followed.
	dst, dir := newDir(t)
	target := filepath.Join(t.TempDir(), "victim")
	write(t, target, []byte("intact"), 0o644)
	if err := os.Symlink(target, filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entry(tw, "f", []byte("restored"))
	tw.Close()
	if _, err := dst.ImportWorkspace(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "intact" {
		t.Fatalf("the import wrote through a symlink: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); string(got) != "restored" {
		t.Fatalf("f = %q", got)
	}
}

func TestRestoreRefusesATamperedChunk(t *testing.T) {
	ctx := context.Background()
	src, dir := newDir(t)
	write(t, filepath.Join(dir, "f"), []byte("content"), 0o644)
	bs := &blobs{}
	st := &snapshot.Store{Blobs: bs}
	snap, err := st.Save(ctx, src, "ses_1", nil)
	if err != nil {
		t.Fatal(err)
	}
	bs.m[snapshot.ChunkKey("ses_1", snapshot.HashHex([]byte("content")))] = []byte("tampered")
	dst, out := newDir(t)
	if _, err := st.Restore(ctx, dst, "ses_1", *snap); err == nil {
		t.Fatal("restored a tampered chunk")
	}
	if got, err := os.ReadFile(filepath.Join(out, "f")); err == nil && string(got) == "tampered" {
		t.Fatal("the tampered content reached the workspace")
	}
	if _, err := st.Restore(ctx, dst, "ses_other", *snap); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("another session's snapshot: %v", err)
	}
}
