package snapshot_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// When sandboxd is not root (a process sandbox of a runtime run by an
// ordinary user: commands run as sandboxd's own user), a read-only
// directory must still restore. `go mod download` with HOME in the
// workspace leaves $HOME/go/pkg/mod full of 0555 directories; Import
// chmods a directory to its mode before writing what it holds, so the
// restore fails with EACCES and the whole workspace is lost.
func TestAttackReadOnlyDirRestoresWhenNotRoot(t *testing.T) {
	if os.Getenv("ATTACK_NONROOT_CHILD") == "1" {
		nonRootChild(t)
		return
	}
	if os.Geteuid() != 0 {
		nonRootChild(t)
		return
	}
	base := t.TempDir()
	os.Chmod(base, 0o777)
	os.Chmod(filepath.Dir(base), 0o755)
	bin := filepath.Join(base, "snapshot.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestAttackReadOnlyDirRestoresWhenNotRoot$", "-test.v")
	cmd.Env = append(os.Environ(), "ATTACK_NONROOT_CHILD=1", "TMPDIR="+base, "GOCACHE="+base, "HOME="+base)
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
}

func nonRootChild(t *testing.T) {
	src, dir := newDir(t)
	write(t, filepath.Join(dir, "go/pkg/mod/example.com/m@v1/go.mod"), []byte("module m\n"), 0o444)
	for _, d := range []string{"go/pkg/mod/example.com/m@v1", "go/pkg/mod/example.com"} {
		if err := os.Chmod(filepath.Join(dir, d), 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		filepath.Walk(filepath.Dir(dir), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	ctx := context.Background()
	st := &snapshot.Store{Blobs: &blobs{}}
	snap, err := st.Save(ctx, src, "ses_a", nil)
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	dst, out := newDir(t)
	if _, err := st.Restore(ctx, dst, "ses_a", *snap); err != nil {
		t.Fatalf("restoring a workspace with a read-only directory as uid %d: %v", os.Geteuid(), err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "go/pkg/mod/example.com/m@v1/go.mod")); err != nil || string(b) != "module m\n" {
		t.Fatalf("%q %v", b, err)
	}
}
