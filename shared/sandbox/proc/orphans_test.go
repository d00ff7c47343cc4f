package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// A clean stop (StopAll) stops the sandboxd another provider — an earlier
// process that was killed, here one that is simply never closed — started
// under the same base directory, and forgets its pid file.
func TestStopAllStopsForeignSandboxd(t *testing.T) {
	w := newWorld(t, "ses_a")
	p1 := w.provider()
	acquire(t, p1, "ses_a", contracts.SandboxSpec{})
	rec := w.record("ses_a")
	c := childOf(p1, rec)
	if _, err := os.Stat(pidPath(c.dir, c.pid)); err != nil {
		t.Fatalf("no pid file for the started sandboxd: %v", err)
	}
	p2 := w.provider()
	if err := p2.StopAll(); err != nil {
		t.Fatal(err)
	}
	<-c.done // p2 is not its parent: only the pid file led p2 to it
	if c.err != nil {
		t.Errorf("sandboxd exit after StopAll: %v; want a clean exit (SIGTERM)", c.err)
	}
	if files, _ := p2.pidFiles(); len(files) != 0 {
		t.Errorf("pid files left: %+v", files)
	}
}

// Reap (at boot) stops the sandboxd no session record names and keeps the
// recorded one, which the next Acquire reconnects to.
func TestReapStopsUnrecordedOnly(t *testing.T) {
	w := newWorld(t, "ses_a", "ses_b")
	p1 := w.provider()
	write(t, acquire(t, p1, "ses_a", contracts.SandboxSpec{}), "a.txt", "kept")
	acquire(t, p1, "ses_b", contracts.SandboxSpec{})
	ca, cb := childOf(p1, w.record("ses_a")), childOf(p1, w.record("ses_b"))
	if _, err := placement.Replace(context.Background(), w.store, "ses_b", w.record("ses_b"), nil); err != nil {
		t.Fatal(err)
	}
	p2 := w.provider()
	if err := p2.Reap(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-cb.done
	sb := acquire(t, p2, "ses_a", contracts.SandboxSpec{})
	if got := read(t, sb, "a.txt"); got != "kept" || liveChildren(p2) != 0 {
		t.Fatalf("recorded sandboxd not reused: read %q, p2 started %d", got, liveChildren(p2))
	}
	select {
	case <-ca.done:
		t.Fatal("Reap stopped the recorded sandboxd")
	default:
	}
}

// A pid file whose pid now names another process (same pid, another start
// time) never gets that process signalled.
func TestStopAllSparesReusedPid(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := identify(cmd.Process.Pid)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("no pid identities here")
	}
	if err != nil {
		t.Fatal(err)
	}
	id.start += "0" // recorded when the pid was another process's
	dir := filepath.Join(w.base, "ses_gone")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pidPath(dir, id.pid), []byte(id.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.provider().StopAll(); err != nil {
		t.Fatal(err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the unrelated process was signalled: %v", err)
	}
	if _, err := os.Stat(pidPath(dir, id.pid)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale pid file kept: %v", err)
	}
}
