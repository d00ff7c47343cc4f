package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// `cairn dev --sandbox process`: every session's tools run in a sandboxd
// on loopback, started by the runtime, reached over the remote protocol.

// shellTurn submits prompt (run by the scripted shell model with the bash
// tool) and waits for the submission to end.
func shellTurn(t *testing.T, ctx context.Context, d *devServer, sid, prompt string) (contracts.Submission, []string) {
	t.Helper()
	su, err := d.cl.Submit(ctx, sid, prompt, client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := waitDone(t, ctx, d.cl, sid, su.ID)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("turn %q: %s %s", prompt, got.Phase, got.Error)
	}
	return got, transcriptOf(t, ctx, d.cl, sid)
}

// sandboxRecord reads the session's recorded sandbox and makes sure its
// sandboxd is stopped when the test ends (a SIGKILLed runtime leaves it to
// its idle timeout).
func sandboxRecord(t *testing.T, ctx context.Context, d *devServer, sid string) contracts.SandboxRecord {
	t.Helper()
	s, err := d.cl.Session(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if s.Sandbox == nil || s.Sandbox.Kind != "process" {
		t.Fatalf("session %s has no process sandbox recorded: %+v", sid, s.Sandbox)
	}
	if pid, err := strconv.Atoi(strings.TrimPrefix(s.Sandbox.ID, "pid:")); err == nil {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	return *s.Sandbox
}

func TestDevProcessSandboxKeepsFilesAcrossTurns(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	// Names a denylist would miss too: only an allowlist of the runtime's
	// environment reaches the sandbox.
	secrets := []string{"AWS_SECRET_ACCESS_KEY=runtime-secret", "CAIRN_SECRET=runtime-secret", "OPENAI_API_KEY=runtime-secret",
		"GITHUB_PAT=runtime-secret", "DATABASE_URL=postgres://u:runtime-secret@h/db"}
	d := startDevEnv(t, data, secrets, "--sandbox", "process")
	s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
	if err != nil {
		t.Fatal(err)
	}
	shellTurn(t, ctx, d, s.ID, "echo kept > kept.txt")
	rec := sandboxRecord(t, ctx, d, s.ID)
	_, tr := shellTurn(t, ctx, d, s.ID, "cat kept.txt; env")
	last := tr[len(tr)-2] // the second turn's tool result
	if !strings.Contains(last, "result:kept\n") {
		t.Fatalf("the second turn did not see the first turn's file: %s", last)
	}
	for _, leak := range []string{"runtime-secret", "AWS_", "CAIRN_", "SANDBOXD_"} {
		if strings.Contains(last, leak) {
			t.Fatalf("the sandbox environment shows %q: %s", leak, last)
		}
	}
	if again := sandboxRecord(t, ctx, d, s.ID); again.ID != rec.ID || again.Endpoint != rec.Endpoint {
		t.Fatalf("the second turn got a new sandbox: %+v then %+v", rec, again)
	}
	if _, err := os.Stat(filepath.Join(data, "sandboxd", s.ID, "workspace", "kept.txt")); err != nil {
		t.Fatalf("the file is not in the session's sandboxd workspace: %v", err)
	}
}

// The runtime is SIGKILLed while a mutating command runs in sandboxd. The
// command finishes there and sandboxd records it; the restarted runtime
// reconnects to the same sandboxd, asks it about the call and gets the real
// result: the command ran once and nothing is reported interrupted.
func TestKillDuringRemoteMutatingCall(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	d := startDev(t, data, "--sandbox", "process")
	s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
	if err != nil {
		t.Fatal(err)
	}
	su, err := d.cl.Submit(ctx, s.ID, "echo line >> out.txt; sleep 1; echo wrote", client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, d.cl, s.ID, su.ID, func(e contracts.Event) bool { return e.Type == contracts.EventToolStarted })
	rec := sandboxRecord(t, ctx, d, s.ID)
	// Kill once the command is running in sandboxd (its first line is out).
	out := filepath.Join(data, "sandboxd", s.ID, "workspace", "out.txt")
	for deadline := time.Now().Add(20 * time.Second); ; {
		if b, _ := os.ReadFile(out); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started in sandboxd")
		}
		time.Sleep(5 * time.Millisecond)
	}
	d.kill(t)

	d2 := startDev(t, data, "--sandbox", "process")
	got := waitDone(t, ctx, d2.cl, s.ID, su.ID)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("after restart: %s %s", got.Phase, got.Error)
	}
	if again := sandboxRecord(t, ctx, d2, s.ID); again.ID != rec.ID {
		t.Fatalf("the restarted runtime started a new sandboxd (%s) instead of reconnecting to %s", again.ID, rec.ID)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "line\n" {
		t.Fatalf("out.txt = %q, %v; want the line exactly once", b, err)
	}
	tr := transcriptOf(t, ctx, d2.cl, s.ID)
	if result := tr[2]; !strings.Contains(result, "result:wrote") || strings.Contains(result, "interrupted") {
		t.Fatalf("the resumed turn did not get the sandbox's recorded result: %s", result)
	}
}

// A sandboxd that dies under a running call: the call gets a clear tool
// error (the turn neither hangs nor fails), and the next turn gets a new
// sandboxd on the same workspace.
func TestDeadSandboxIsReplaced(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	d := startDev(t, data, "--sandbox", "process")
	s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
	if err != nil {
		t.Fatal(err)
	}
	shellTurn(t, ctx, d, s.ID, "echo kept > kept.txt")
	first := sandboxRecord(t, ctx, d, s.ID)
	// sandboxd is killed under a running call. The command cannot kill it
	// itself (as root, commands run as nobody): it says through a FIFO that
	// it runs, and the test kills sandboxd.
	fifo := filepath.Join(data, "sandboxd", s.ID, "workspace", "running.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0) // neither this open nor the command's write waits
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turn := make(chan []string, 1)
	go func() {
		su, err := d.cl.Submit(ctx, s.ID, "echo running > running.fifo; exec sleep 300", client.SubmitOptions{})
		if err != nil {
			turn <- []string{err.Error(), ""}
			return
		}
		waitDone(t, ctx, d.cl, s.ID, su.ID)
		turn <- transcriptOf(t, ctx, d.cl, s.ID)
	}()
	if _, err := bufio.NewReader(f).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(first.ID, "pid:"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tr := <-turn
	if res := tr[len(tr)-2]; !strings.Contains(res, "sandbox unavailable") || !strings.Contains(res, "err=true") {
		t.Fatalf("the call that hit the dead sandbox: %s", res)
	}
	_, tr = shellTurn(t, ctx, d, s.ID, "cat kept.txt")
	if res := tr[len(tr)-2]; !strings.Contains(res, "result:kept") {
		t.Fatalf("after the replacement: %s", res)
	}
	if second := sandboxRecord(t, ctx, d, s.ID); second.ID == first.ID {
		t.Fatalf("the dead sandboxd %s is still recorded", first.ID)
	}
}
