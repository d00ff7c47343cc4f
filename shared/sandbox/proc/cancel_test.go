package proc

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

	"github.com/cairnrun/cairn/shared/contracts"
)

// A process-kind sandbox (the real sandboxd binary) kills a call whose
// caller's context is cancelled — as a turn's cancel does to its tools
// phase — and records it as ended, so a repeat does not run it again.
func TestCancelledCallIsKilled(t *testing.T) {
	w := newWorld(t, "ses_c")
	sb := acquire(t, w.provider(), "ses_c", contracts.SandboxSpec{})
	fifo := filepath.Join(w.base, "ses_c", "workspace", "pid.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 { // the command runs as nobody (server.DefaultRunAs)
		if err := os.Chmod(fifo, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0) // neither this open nor the command's write waits
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	req := contracts.ExecRequest{Command: "echo $$ > pid.fifo; exec sleep 300", CallID: "call-k", Timeout: 5 * time.Minute}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		_, err := sb.Exec(ctx, req)
		ended <- err
	}()
	lines := make(chan string, 4)
	go func() {
		r := bufio.NewReader(f)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	var pid int
	select {
	case line := <-lines:
		pid, _ = strconv.Atoi(strings.TrimSpace(line))
	case err := <-ended:
		t.Fatalf("exec ended before the cancel: %v", err)
	}
	cancel()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled exec: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pid %d after the cancelled Exec returned: %v", pid, err)
	}
	o, err := sb.(contracts.CallLedger).CallOutcome(t.Context(), "call-k")
	if err != nil || o.State != contracts.CallDone {
		t.Fatalf("outcome %+v, %v; want done", o, err)
	}
	rctx, rcancel := context.WithCancel(t.Context())
	defer rcancel()
	type outcome struct {
		res contracts.ExecResult
		err error
	}
	again := make(chan outcome, 1)
	go func() {
		res, err := sb.Exec(rctx, req)
		again <- outcome{res, err}
	}()
	select {
	case o := <-again:
		if o.err != nil || o.res.ExitCode != -1 || !strings.Contains(o.res.Stderr, "cancelled") {
			t.Errorf("repeat: %+v, %v; want the recorded cancelled result", o.res, o.err)
		}
	case line := <-lines:
		rcancel()
		<-again
		t.Fatalf("the repeat ran the cancelled command again (pid %s)", strings.TrimSpace(line))
	}
}
