package snapshot_test

// Attack tests of durable workspaces: a hostile command controls the
// workspace between calls, a compromised sandboxd controls the export
// stream. Tests named ...Defect fail while the defect they show is there;
// the others are regression checks of attacks that hold.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// saveRestore snapshots src's workspace and restores it into a fresh one.
func saveRestore(t *testing.T, src *dirSandbox) (string, error) {
	t.Helper()
	ctx := context.Background()
	st := &snapshot.Store{Blobs: &blobs{}}
	snap, err := st.Save(ctx, src, "ses_a", nil)
	if err != nil {
		return "", err
	}
	dst, dir := newDir(t)
	if _, err := st.Restore(ctx, dst, "ses_a", *snap); err != nil {
		return dir, err
	}
	return dir, nil
}

// Linux names are bytes: a name that is not UTF-8 (a command can make one
// with a single printf) must come back as it was. json.Marshal turns every
// invalid byte into U+FFFD, so the restored name differs and two such names
// collapse into one file.
func TestAttackInvalidUTF8NamesRestoreAsTheyWere(t *testing.T) {
	src, dir := newDir(t)
	write(t, filepath.Join(dir, "a\xff"), []byte("first"), 0o644)
	write(t, filepath.Join(dir, "a\xfe"), []byte("second"), 0o644)
	if err := os.Symlink("t\xff", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	out, err := saveRestore(t, src)
	if err != nil {
		t.Fatalf("save/restore of a workspace with non-UTF-8 names: %v", err)
	}
	got := names(t, out)
	for _, want := range []string{"a\xff", "a\xfe"} {
		b, err := os.ReadFile(filepath.Join(out, want))
		if err != nil {
			t.Errorf("%q not restored (restored names: %q): %v", want, got, err)
			continue
		}
		if w := map[string]string{"a\xff": "first", "a\xfe": "second"}[want]; string(b) != w {
			t.Errorf("%q restored as %q, want %q", want, b, w)
		}
	}
	if tgt, err := os.Readlink(filepath.Join(out, "l")); err != nil || tgt != "t\xff" {
		t.Errorf("symlink target restored as %q (%v), want %q", tgt, err, "t\xff")
	}
}

// A backslash is an ordinary byte of a Linux name (a Windows-minded tool
// makes "C:\\x" files by mistake). A workspace holding one must still be
// snapshotted — else every later snapshot fails until the model finds and
// removes a file it has no reason to suspect.
func TestAttackBackslashNameDoesNotStopSnapshots(t *testing.T) {
	src, dir := newDir(t)
	write(t, filepath.Join(dir, `dir\file`), []byte("x"), 0o644)
	write(t, filepath.Join(dir, "work.txt"), []byte("precious"), 0o644)
	out, err := saveRestore(t, src)
	if err != nil {
		t.Fatalf("a backslash in one name fails the whole snapshot: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, `dir\file`)); err != nil || string(b) != "x" {
		t.Errorf("backslash name restored as %q (%v)", b, err)
	}
}

// Modification times outside 1678..2262 (touch -d 2500-01-01) overflow
// UnixNano: the restored mtime must not be a different date.
func TestAttackFarMtimeIsNotAnotherDate(t *testing.T) {
	src, dir := newDir(t)
	p := filepath.Join(dir, "f")
	write(t, p, []byte("x"), 0o644)
	far := time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := syscall.Timespec{Sec: far.Unix()} // os.Chtimes itself cannot say 2500
	if err := syscall.UtimesNano(p, []syscall.Timespec{ts, ts}); err != nil {
		t.Fatal(err)
	}
	out, err := saveRestore(t, src)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(out, "f"))
	if err != nil {
		t.Fatal(err)
	}
	// os.Chtimes cannot set a time past 2262 (nanoseconds in an int64): the
	// file keeps the time of its restore — never another date of the past.
	if got := fi.ModTime(); !got.Equal(far) && got.Year() < 2026 {
		t.Errorf("mtime %v restored as %v", far, got.UTC())
	}
}

// A compromised sandboxd names chunks it did send but claims sizes they do
// not add up to (Check counts chunks, never their bytes; a negative size
// needs none). The runtime must refuse the manifest — else it records a
// snapshot whose restore always fails and the workspace is lost.
func TestAttackManifestSizesThatDoNotAddUp(t *testing.T) {
	ctx := context.Background()
	small := []byte("tiny")
	sum := snapshot.HashHex(small)
	cases := map[string]string{
		"size above its chunks": fmt.Sprintf(`{"version":1,"entries":[{"path":"f","type":"file","mode":420,"size":100,"chunks":[%q]}]}`, sum),
		"size below its chunks": fmt.Sprintf(`{"version":1,"entries":[{"path":"f","type":"file","mode":420,"size":1,"chunks":[%q]}]}`, sum),
		"negative size":         `{"version":1,"entries":[{"path":"f","type":"file","mode":420,"size":-5}]}`,
		"short middle chunk":    fmt.Sprintf(`{"version":1,"entries":[{"path":"f","type":"file","mode":420,"size":%d,"chunks":[%q,%q]}]}`, snapshot.ChunkSize+4, sum, sum),
	}
	for name, manifest := range cases {
		bs := &blobs{}
		st := &snapshot.Store{Blobs: bs}
		snap, err := st.Save(ctx, forged{func(tw *tar.Writer) {
			entry(tw, "chunk/"+sum, small)
			entry(tw, "manifest.json", []byte(manifest))
		}}, "ses_a", nil)
		if err != nil {
			continue // refused: held
		}
		dst, _ := newDir(t)
		_, rerr := st.Restore(ctx, dst, "ses_a", *snap)
		t.Errorf("%s: the runtime stored snapshot %s (%d bytes); restoring it: %v", name, snap.ID[:12], snap.Bytes, rerr)
	}
}

// A compromised sandboxd may reference one chunk it did send from many
// entries with the same path: Check allows duplicate paths, and a file
// entry after a dir entry of the same name removes the directory tree at
// restore (writeFile's RemoveAll). Held only in that it stays inside the
// root; recorded here so a change in behaviour is seen.
func TestAttackDuplicatePathsStayInRoot(t *testing.T) {
	ctx := context.Background()
	data := []byte("x")
	sum := snapshot.HashHex(data)
	bs := &blobs{}
	st := &snapshot.Store{Blobs: bs}
	snap, err := st.Save(ctx, forged{func(tw *tar.Writer) {
		entry(tw, "chunk/"+sum, data)
		entry(tw, "manifest.json", []byte(fmt.Sprintf(`{"version":1,"entries":[
			{"path":"l","type":"symlink","target":"/etc"},
			{"path":"l","type":"dir","mode":511},
			{"path":"l/passwd","type":"file","mode":420,"size":1,"chunks":[%q]},
			{"path":"up","type":"symlink","target":".."},
			{"path":"up/escaped","type":"file","mode":420,"size":1,"chunks":[%q]}]}`, sum, sum)))
	}}, "ses_a", nil)
	if err != nil {
		t.Logf("refused at save: %v", err)
		return
	}
	dst, dir := newDir(t)
	_, err = st.Restore(ctx, dst, "ses_a", *snap)
	t.Logf("restore: %v", err)
	if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), "escaped")); err == nil {
		t.Fatal("a file was written outside the workspace")
	}
	if b, _ := os.ReadFile("/etc/passwd"); string(b) == "x" {
		t.Fatal("/etc/passwd overwritten")
	}
	fi, err := os.Stat("/etc")
	if err == nil && fi.Mode().Perm() == 0o777 {
		t.Fatal("/etc chmod 777 through a symlink")
	}
}

// A hostile command fills the workspace with symlinks out of it and to the
// sandbox state, fifos and a socket; the export must read nothing outside,
// not block, and keep symlinks as symlinks.
func TestAttackExportReadsNothingOutsideAndNeverBlocks(t *testing.T) {
	src, dir := newDir(t)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret"), []byte("SECRET"), 0o600)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "abs"))
	os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(dir, "rel"))
	os.Symlink(outside, filepath.Join(dir, "dirlink"))
	os.Symlink("/proc/self/root/etc/shadow", filepath.Join(dir, "proc"))
	os.Symlink("loop", filepath.Join(dir, "loop"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A fifo behind a symlink: the walk must not open it.
	os.Symlink("fifo", filepath.Join(dir, "tofifo"))
	done := make(chan struct{})
	var snapErr error
	var buf bytes.Buffer
	go func() {
		defer close(done)
		snapErr = snapshot.Export(context.Background(), src.root, func(string) bool { return false }, "", &src.cache, snapshot.Limits{}, &buf)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("export blocked")
	}
	if snapErr != nil {
		t.Fatal(snapErr)
	}
	if bytes.Contains(buf.Bytes(), []byte("SECRET")) {
		t.Fatal("the export stream holds a file from outside the workspace")
	}
	_, m := countChunks(buf.Bytes())
	if !m {
		t.Fatal("no manifest")
	}
}

// Setuid, setgid and sticky bits never come back; neither does a mode the
// stream claims beyond the permission bits.
func TestAttackSetuidBitsNotRestored(t *testing.T) {
	src, dir := newDir(t)
	write(t, filepath.Join(dir, "suid"), []byte("#!/bin/sh\n"), 0o755)
	os.Chmod(filepath.Join(dir, "suid"), 0o4755|os.ModeSetuid)
	syscall.Chmod(filepath.Join(dir, "suid"), 0o6755)
	os.Mkdir(filepath.Join(dir, "sticky"), 0o755)
	syscall.Chmod(filepath.Join(dir, "sticky"), 0o3777)
	out, err := saveRestore(t, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"suid", "sticky"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(out, n), &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&0o7000 != 0 {
			t.Errorf("%s restored with mode %o", n, st.Mode&0o7777)
		}
	}
	// A forged stream asking for setuid directly.
	dst, d2 := newDir(t)
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "x", Mode: 0o6777, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.Close()
	if _, err := snapshot.Import(context.Background(), dst.root, &tb, nil); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	syscall.Lstat(filepath.Join(d2, "x"), &st)
	if st.Mode&0o7000 != 0 {
		t.Errorf("forged setuid restored: %o", st.Mode&0o7777)
	}
}

// Import writes through the root: hard links, devices, fifos and names
// that climb out are refused; a symlink planted by an earlier entry is not
// followed for writes.
func TestAttackImportRefusesSpecialEntries(t *testing.T) {
	for name, h := range map[string]*tar.Header{
		"hard link":  {Name: "h", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"},
		"char dev":   {Name: "c", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3},
		"fifo":       {Name: "p", Typeflag: tar.TypeFifo},
		"dotdot":     {Name: "a/../../x", Typeflag: tar.TypeReg},
		"absolute":   {Name: "/tmp/x", Typeflag: tar.TypeReg},
		"nul":        {Name: "a\x00b", Typeflag: tar.TypeReg},
		"gnu sparse": {Name: "s", Typeflag: tar.TypeGNUSparse},
	} {
		dst, dir := newDir(t)
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		h.Mode = 0o644
		if err := tw.WriteHeader(h); err != nil {
			// the writer refuses it: write it raw is not worth it here
			t.Logf("%s: tar writer refused: %v", name, err)
			continue
		}
		tw.Close()
		_, err := snapshot.Import(context.Background(), dst.root, &tb, nil)
		if err == nil {
			t.Errorf("%s: imported (workspace now %q)", name, names(t, dir))
		}
	}
}

// Import into a workspace that already holds a symlink to outside (a
// sandbox whose image or earlier command left one) writes the file in its
// place, never through it.
func TestAttackImportOverPlantedSymlink(t *testing.T) {
	dst, dir := newDir(t)
	outside := t.TempDir()
	target := filepath.Join(outside, "victim")
	write(t, target, []byte("original"), 0o600)
	os.Symlink(target, filepath.Join(dir, "f"))
	os.Symlink(outside, filepath.Join(dir, "d"))
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o777, Size: 3, Typeflag: tar.TypeReg})
	tw.Write([]byte("pwn"))
	tw.WriteHeader(&tar.Header{Name: "d", Mode: 0o777, Typeflag: tar.TypeDir})
	tw.WriteHeader(&tar.Header{Name: "d/victim", Mode: 0o777, Size: 3, Typeflag: tar.TypeReg})
	tw.Write([]byte("pwn"))
	tw.Close()
	_, err := snapshot.Import(context.Background(), dst.root, &tb, nil)
	t.Logf("import: %v", err)
	b, _ := os.ReadFile(target)
	fi, _ := os.Stat(target)
	if string(b) != "original" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("a file outside the workspace was changed: %q %v", b, fi.Mode())
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() == 0o777 {
		t.Fatalf("the directory outside was chmod'ed through a symlink")
	}
}

// An entry limit does not bound the manifest: paths are stored whole, so a
// chain of N nested directories of 255-byte names costs ~128·N² bytes of
// manifest. 1,000 entries (1% of the limit) already make a manifest over
// the runtime's 64 MiB decode bound: every snapshot of that workspace then
// fails after sandboxd built it in memory and sent it.
func TestAttackDeepNestingManifestBlowup(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	src, dir := newDir(t)
	name := strings.Repeat("n", 255)
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fd := int(d.Fd())
	const depth = 1000
	for i := 0; i < depth; i++ {
		if err := syscall.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if fd != int(d.Fd()) {
			syscall.Close(fd)
		}
		fd = nfd
	}
	syscall.Close(fd)
	d.Close()
	var cw countingWriter
	start := time.Now()
	err = snapshot.Export(context.Background(), src.root, func(string) bool { return false }, "", &src.cache, snapshot.Limits{}, &cw)
	t.Logf("export of %d nested dirs: %v, %d MiB streamed in %v", depth, err, cw.n>>20, time.Since(start))
	if err == nil && cw.n > 64<<20 {
		t.Errorf("sandboxd built and streamed a %d MiB manifest for %d entries; the runtime decodes at most 64 MiB, so every snapshot fails", cw.n>>20, depth)
	}
	if err == nil {
		_, err = saveRestore(t, src)
		t.Logf("save: %v", err)
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// A sparse file of 1 TiB is refused from its metadata, before any read.
func TestAttackHugeSparseFileRefusedBeforeReading(t *testing.T) {
	src, dir := newDir(t)
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 40)
	f.Close()
	var cw countingWriter
	err = snapshot.Export(context.Background(), src.root, func(string) bool { return false }, "", &src.cache, snapshot.Limits{}, &cw)
	if !errors.Is(err, contracts.ErrTooLarge) || cw.n != 0 {
		t.Fatalf("export: %v after %d bytes", err, cw.n)
	}
	t.Logf("error given: %v", err)
}
