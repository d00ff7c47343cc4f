package remote_test

// Attack tests of durable workspaces over a real sandboxd running as root
// whose commands run as nobody (65534): the command is hostile and leaves
// what it likes in the workspace; a compromised sandboxd answers the
// export route with what it likes.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

type attackBlobs struct {
	m map[string][]byte
}

func (b *attackBlobs) PutBlob(_ context.Context, k string, d []byte) error {
	if b.m == nil {
		b.m = map[string][]byte{}
	}
	if _, ok := b.m[k]; !ok {
		b.m[k] = append([]byte(nil), d...)
	}
	return nil
}

func (b *attackBlobs) GetBlob(_ context.Context, k string) ([]byte, error) {
	d, ok := b.m[k]
	if !ok {
		return nil, contracts.ErrNotFound
	}
	return d, nil
}

var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// rootSandboxd serves a sandboxd whose commands run as nobody; it returns
// the client, the workspace and the state dir.
func rootSandboxd(t *testing.T) (*remote.Client, string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	os.Chmod(base, 0o755) // the commands' user must reach its workspace
	os.Chmod(filepath.Dir(base), 0o755)
	ws, state := filepath.Join(base, "ws"), filepath.Join(base, "state")
	c := newClient(t, serve(t, server.Config{Workspace: ws, StateDir: state, Sandbox: local.Options{Credential: nobody}}), remote.Options{})
	return c, ws, state
}

func run(t *testing.T, c *remote.Client, cmd string) string {
	t.Helper()
	res, err := c.Exec(context.Background(), contracts.ExecRequest{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d: %s %s", cmd, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// The hostile command points symlinks at /etc/shadow, the state dir and
// the root; leaves fifos, a socket, hard links, a 000 file, a 000
// directory, setuid bits. The snapshot taken by root must hold nothing the
// command could not read, and the restore into a second root sandboxd
// must give nobody nothing more than it had.
func TestAttackHostileWorkspaceThroughRootSandboxd(t *testing.T) {
	ctx := context.Background()
	first, ws1, state1 := rootSandboxd(t)
	if err := os.WriteFile(filepath.Join(state1, "planted-secret"), []byte("STATE-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := run(t, first, "id -u"); strings.TrimSpace(out) != "65534" {
		t.Fatalf("commands run as %q", out)
	}
	run(t, first, `set -e
ln -s /etc/shadow shadow
ln -s `+state1+` state
ln -s / rootfs
ln -s /proc/self/root proc
mkfifo fifo
python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind("sock")' || true
echo mine > own && ln own own2
ln /etc/shadow hard 2>/dev/null || true
echo hidden > zero && chmod 000 zero
mkdir closed && echo inner > closed/f && chmod 000 closed
echo x > suid && chmod 6755 suid
echo ok > plain`)
	bs := &attackBlobs{}
	st := &snapshot.Store{Blobs: bs}
	snap, err := st.Save(ctx, first, "ses_x", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot: %+v", snap)
	shadow, _ := os.ReadFile("/etc/shadow")
	for k, v := range bs.m {
		if strings.Contains(string(v), "STATE-SECRET") || (len(shadow) > 0 && bytes.Contains(v, shadow[:min(len(shadow), 32)])) {
			t.Errorf("blob %s holds a secret from outside the workspace", k)
		}
	}

	second, ws2, _ := rootSandboxd(t)
	if _, err := st.Restore(ctx, second, "ses_x", *snap); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(ws2, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == ws2 {
			return nil
		}
		s := fi.Sys().(*syscall.Stat_t)
		rel, _ := filepath.Rel(ws2, p)
		if s.Uid != 65534 || s.Gid != 65534 {
			t.Errorf("%s restored owned by %d:%d", rel, s.Uid, s.Gid)
		}
		if s.Mode&0o7000 != 0 {
			t.Errorf("%s restored with mode %o", rel, s.Mode&0o7777)
		}
		if fi.Mode()&(os.ModeNamedPipe|os.ModeSocket|os.ModeDevice) != 0 {
			t.Errorf("%s restored as %v", rel, fi.Mode())
		}
		if fi.Mode()&os.ModeSymlink == 0 && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "STATE-SECRET") || (len(shadow) > 0 && bytes.Equal(b, shadow)) {
				t.Errorf("%s holds a secret", rel)
			}
		}
		return nil
	})
	for _, l := range []string{"shadow", "state", "rootfs", "proc"} {
		if fi, err := os.Lstat(filepath.Join(ws2, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s not restored as a symlink: %v %v", l, fi, err)
		}
	}
	// What the hostile command lost without being told: hard-linked files.
	for _, n := range []string{"own", "own2"} {
		if _, err := os.Lstat(filepath.Join(ws2, n)); err != nil {
			t.Logf("DATA LOSS: %s (a hard-linked file the command owns) is not in the restored workspace; snapshot record %+v says nothing of it", n, snap)
		}
	}
	_ = ws1
}

// A compromised sandboxd answers the export with chunks without end (the
// same valid chunk again and again): the runtime must stop it at the
// snapshot limit, quickly and with bounded memory, and store no manifest.
func TestAttackCompromisedSandboxdFloodsTheExport(t *testing.T) {
	chunk := bytes.Repeat([]byte{'z'}, snapshot.ChunkSize)
	sum := snapshot.HashHex(chunk)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-tar")
		tw := tar.NewWriter(w)
		for {
			if err := tw.WriteHeader(&tar.Header{Name: "chunk/" + sum, Size: int64(len(chunk)), Mode: 0o600, Typeflag: tar.TypeReg}); err != nil {
				return
			}
			if _, err := tw.Write(chunk); err != nil {
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := newClient(t, "http://"+ln.Addr().String(), remote.Options{})
	bs := &attackBlobs{}
	_, err = (&snapshot.Store{Blobs: bs}).Save(context.Background(), c, "ses_x", nil)
	if !errors.Is(err, contracts.ErrTooLarge) {
		t.Fatalf("a flood of chunks: %v", err)
	}
	for k := range bs.m {
		if strings.Contains(k, "/snapshot/") {
			t.Fatal("a manifest was stored")
		}
	}
	t.Logf("refused: %v", err)
}

// The import route bounds the stream it accepts and refuses types beyond
// dir, file and symlink, whoever sends it (the runtime is the only
// legitimate sender, but the token may be the command's to read nowhere).
func TestAttackImportRouteRefusesDevicesAndHardLinks(t *testing.T) {
	c, ws, _ := rootSandboxd(t)
	for name, h := range map[string]*tar.Header{
		"device":    {Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666},
		"hard link": {Name: "h", Typeflag: tar.TypeLink, Linkname: "/etc/shadow", Mode: 0o644},
	} {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		tw.WriteHeader(h)
		tw.Close()
		if _, err := c.ImportWorkspace(context.Background(), &b); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(ws, h.Name)); err == nil {
			t.Errorf("%s: created", name)
		}
	}
	_ = io.EOF
}
