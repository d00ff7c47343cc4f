package snapshot_test

// Attacks by a compromised sandboxd or a hostile workspace on the runtime
// side: floods, other sessions, lying manifests, huge directories.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// A compromised sandboxd floods chunks: the same chunk again and again, or
// chunks no manifest names, then never sends a manifest. The runtime cuts
// it off at the byte limit, but stores every distinct chunk it received
// although no snapshot names them (orphans never collected).
func TestAttackChunkFloodIsBoundedButLeavesOrphans(t *testing.T) {
	ctx := context.Background()
	bs := &blobs{}
	st := &snapshot.Store{Blobs: bs}
	_, err := st.Save(ctx, forged{func(tw *tar.Writer) {
		for i := 0; i < 50; i++ {
			d := []byte(fmt.Sprintf("orphan-%d", i))
			entry(tw, "chunk/"+snapshot.HashHex(d), d)
		}
		// then an invalid manifest: nothing is recorded
		entry(tw, "manifest.json", []byte(`{"version":1,"entries":[{"path":"../b","type":"dir"}]}`))
	}}, "ses_a", nil)
	if err == nil {
		t.Fatal("saved")
	}
	orphans := 0
	for k := range bs.m {
		if strings.Contains(k, "/chunk/") {
			orphans++
		}
	}
	t.Logf("refused (%v); %d orphan chunks stored", err, orphans)
}

// Snapshots are per session: session b cannot restore session a's
// snapshot by its id, and a chunk of a is not had for b.
func TestAttackCrossSessionRestoreRefused(t *testing.T) {
	ctx := context.Background()
	src, dir := newDir(t)
	write(t, filepath.Join(dir, "secret"), []byte("of session a"), 0o600)
	st := &snapshot.Store{Blobs: &blobs{}}
	snap, err := st.Save(ctx, src, "ses_a", nil)
	if err != nil {
		t.Fatal(err)
	}
	dst, out := newDir(t)
	if _, err := st.Restore(ctx, dst, "ses_b", *snap); err == nil {
		t.Fatalf("session b restored a's snapshot: %q", names(t, out))
	}
	// A fresh Store (no cache) too.
	st2 := &snapshot.Store{Blobs: st.Blobs}
	if _, err := st2.Restore(ctx, dst, "ses_b", *snap); err == nil {
		t.Fatal("session b restored a's snapshot from the blob store")
	}
}

// A compromised sandboxd answers "unchanged" after sending chunks, or with
// a different id, or sends a manifest far over 64 MiB: all refused.
func TestAttackUnchangedAndOversizedManifestRefused(t *testing.T) {
	ctx := context.Background()
	src, dir := newDir(t)
	write(t, filepath.Join(dir, "f"), []byte("x"), 0o644)
	bs := &blobs{}
	st := &snapshot.Store{Blobs: bs}
	prev, err := st.Save(ctx, src, "ses_a", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := []byte("y")
	for name, stream := range map[string]func(*tar.Writer){
		"unchanged after a chunk": func(tw *tar.Writer) {
			entry(tw, "chunk/"+snapshot.HashHex(d), d)
			entry(tw, "unchanged", []byte(prev.ID))
		},
		"unchanged with another id": func(tw *tar.Writer) {
			entry(tw, "unchanged", []byte(strings.Repeat("0", 64)))
		},
		"huge manifest": func(tw *tar.Writer) {
			tw.WriteHeader(&tar.Header{Name: "manifest.json", Size: 80 << 20, Mode: 0o600, Typeflag: tar.TypeReg})
			tw.Write([]byte(`{"version":1,"entries":[`))
			e := []byte(`{"path":"a","type":"dir"},`)
			n := 24
			for n+len(e) < 80<<20 {
				tw.Write(e)
				n += len(e)
			}
			tw.Write(bytes.Repeat([]byte(" "), 80<<20-n))
		},
	} {
		got, err := st.Save(ctx, forged{stream}, "ses_a", prev)
		if err == nil {
			t.Errorf("%s: accepted (%v)", name, got)
		}
	}
}

// One directory with more entries than the limit: fs.WalkDir reads (and
// sorts) a whole directory before the entry limit is counted, twice
// (measure, then the walk), so sandboxd's memory grows with what the
// command created, not with the limit. Logged, not failed: the bound is
// the disk's inodes.
func TestAttackHugeDirectoryIsReadWholeBeforeTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	src, dir := newDir(t)
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pad := strings.Repeat("p", 200)
	const n = 30_000
	for i := 0; i < n; i++ {
		fd, err := syscall.Openat(int(d.Fd()), fmt.Sprintf("%s%06d", pad, i), syscall.O_CREAT|syscall.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err = snapshot.Export(context.Background(), src.root, func(string) bool { return false }, "", &src.cache, snapshot.Limits{MaxEntries: 10}, io.Discard)
	runtime.ReadMemStats(&after)
	t.Logf("limit 10 entries, directory of %d: %v; allocated %d MiB before refusing", n, err, (after.TotalAlloc-before.TotalAlloc)>>20)
	if !errors.Is(err, contracts.ErrTooLarge) {
		t.Fatal(err)
	}
}
