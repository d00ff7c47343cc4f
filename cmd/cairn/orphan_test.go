package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// Orphaned tool effects (issue 15): `cairn dev` is SIGKILLed while a
// mutating command runs. The command says through a FIFO that it started
// (with its shell's pid), then blocks opening a second FIFO the test writes
// only when the case says so; its effect, `echo x >> f`, comes after.
//
//   - local: the runner died with the call. The restarted runtime's tools
//     phase asks the ledger about the call, which kills what the dead
//     runner left (its cgroup or process group) before answering
//     "unknown": the turn commits with the call reported interrupted, f
//     does not exist when the turn is reported, the command is dead and
//     nothing waits on the FIFO any more — the effect can never happen.
//   - process: sandboxd outlives the runtime and still owns the call. The
//     command is let go only once the restarted runtime has asked sandboxd
//     about it (an open in the ledger directory); the turn must then report
//     the command's real result, f has its line exactly once when the turn
//     is reported, and the command is gone.
//
// Both check that f never changes after the turn is reported.

const orphanCommand = `echo "started $$" > started.fifo; read -r _ < release.fifo; echo x >> f; echo effect done`

func TestKillOrphanedToolEffect(t *testing.T) {
	cases := []struct {
		kind      string
		flags     []string
		workspace func(data, sid string) string
		ledger    func(data, sid string) string // the call ledger's directory (process kind)
	}{
		{"local", nil,
			func(data, sid string) string { return filepath.Join(data, "sandboxes", sid) }, nil},
		{"process", []string{"--sandbox", "process"},
			func(data, sid string) string { return filepath.Join(data, "sandboxd", sid, "workspace") },
			func(data, sid string) string { return filepath.Join(data, "sandboxd", sid, "state", "calls") }},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			ctx := context.Background()
			data := t.TempDir()
			d := startDev(t, data, c.flags...)
			s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
			if err != nil {
				t.Fatal(err)
			}
			shellTurn(t, ctx, d, s.ID, "true") // the session's workspace (and sandboxd) exist
			if c.kind == "process" {
				sandboxRecord(t, ctx, d, s.ID) // stops the surviving sandboxd when the test ends
			}
			ws := c.workspace(data, s.ID)
			started := mkfifo(t, filepath.Join(ws, "started.fifo"))
			release := filepath.Join(ws, "release.fifo")
			mkfifo(t, release).Close()
			effect := filepath.Join(ws, "f")

			su, err := d.cl.Submit(ctx, s.ID, orphanCommand, client.SubmitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(started).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "started ")))
			if err != nil {
				t.Fatalf("started line %q: %v", line, err)
			}
			// A pidfd, opened while the command is known alive (it is blocked
			// on release.fifo), names it even if its pid is reused later.
			pidfd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0); unix.Close(pidfd) })

			var opened *os.File // inotify on the ledger directory (process kind)
			if c.ledger != nil {
				opened = watchOpens(t, c.ledger(data, s.ID))
			}
			d.kill(t) // the command is inside the call, blocked
			d2 := startDev(t, data, c.flags...)
			if opened != nil {
				// The restarted runtime asked sandboxd about the call, which is
				// still running there: now let the command go on.
				if _, err := opened.Read(make([]byte, 4096)); err != nil {
					t.Fatal(err)
				}
				w, err := os.OpenFile(release, os.O_WRONLY|syscall.O_NONBLOCK, 0)
				if err != nil {
					t.Fatalf("the command no longer waits on release.fifo after the restart: %v", err)
				}
				_, err = w.WriteString("go\n")
				w.Close()
				if err != nil {
					t.Fatal(err)
				}
			}

			got := waitDone(t, ctx, d2.cl, s.ID, su.ID)
			atEnd, endErr := os.ReadFile(effect) // the effect as the turn is reported
			if got.Phase != contracts.PhaseCommitted {
				t.Fatalf("after restart: %s %s", got.Phase, got.Error)
			}
			tr := transcriptOf(t, ctx, d2.cl, s.ID)
			result := tr[len(tr)-2]
			if c.kind == "local" {
				if !strings.Contains(result, "interrupted") || !strings.Contains(result, "err=true") {
					t.Fatalf("the call whose runner was killed: %s; want it reported interrupted", result)
				}
				if !errors.Is(endErr, os.ErrNotExist) {
					t.Fatalf("f = %q, %v when the turn was reported; the killed call's effect must not happen", atEnd, endErr)
				}
			} else {
				if !strings.Contains(result, "result:effect done") || strings.Contains(result, "interrupted") {
					t.Fatalf("the resumed turn did not get the command's real result: %s", result)
				}
				if endErr != nil || string(atEnd) != "x\n" {
					t.Fatalf("f = %q, %v when the turn was reported; want the line exactly once", atEnd, endErr)
				}
			}

			// The command is gone once the turn is reported (local: the
			// ledger killed it before answering; process: sandboxd recorded
			// its result after it exited).
			if !exitedBy(t, pidfd) {
				t.Fatalf("the command (pid %d) still runs after the turn was reported %s", pid, got.Phase)
			}
			// Nothing is left that could still do the effect: no reader
			// waits on release.fifo, and f is as it was.
			if w, err := os.OpenFile(release, os.O_WRONLY|syscall.O_NONBLOCK, 0); !errors.Is(err, syscall.ENXIO) {
				if err == nil {
					w.Close()
				}
				t.Fatalf("opening release.fifo for writing: %v; want ENXIO (no command waits on it)", err)
			}
			if after, err := os.ReadFile(effect); string(after) != string(atEnd) || (err == nil) != (endErr == nil) {
				t.Fatalf("f changed after the turn was reported: %q (%v) then %q (%v)", atEnd, endErr, after, err)
			}
		})
	}
}

// mkfifo makes a FIFO every user can open (as root, process-kind commands
// run as nobody) and opens it read-write: neither this open nor the
// command's write to it blocks.
func mkfifo(t *testing.T, path string) *os.File {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// watchOpens returns an inotify descriptor reporting every open of a file
// in dir (a read blocks until one happens).
func watchOpens(t *testing.T, dir string) *os.File {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	t.Cleanup(func() { f.Close() })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	return f
}

// exitedBy reports whether the process of pidfd has exited. Checked as the
// turn is reported, it has (the kill or the exit came before); the wait
// only covers the kernel's last steps of an exit already under way, and
// bounds how long a failing run takes.
func exitedBy(t *testing.T, pidfd int) bool {
	t.Helper()
	poll := func(wait time.Duration) bool {
		for {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, int(wait.Milliseconds()))
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			return n > 0
		}
	}
	if poll(0) {
		return true
	}
	t.Logf("the command had not exited as the turn was reported; waiting up to %v", 10*time.Second)
	return poll(10 * time.Second)
}
