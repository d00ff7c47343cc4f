package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

// fifoLines creates a FIFO in dir and returns the lines written to it. The
// test holds it open for reading and writing, so neither the open nor a
// command's write ever waits.
func fifoLines(t *testing.T, dir, name string) <-chan string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	lines := make(chan string, 16)
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
	return lines
}

// A cancelled caller's context stops its call in sandboxd: the client sends
// the cancel before it returns, so the command's process is gone by then,
// the ledger records the call as ended by the cancel, and a repeat of the
// call id returns that outcome without running the command again.
func TestCancelStopsTheCall(t *testing.T) {
	dir := t.TempDir()
	url := serve(t, server.Config{Workspace: dir, StateDir: t.TempDir()})
	c := newClient(t, url, remote.Options{})
	pids := fifoLines(t, dir, "pid.fifo")
	req := contracts.ExecRequest{Command: "echo ran >> runs.txt; echo $$ > pid.fifo; exec sleep 300", CallID: "call-stop", Timeout: 5 * time.Minute}

	why := errors.New("the turn was cancelled")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	ended := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, req)
		ended <- err
	}()
	var pid int
	select {
	case line := <-pids:
		pid, _ = strconv.Atoi(strings.TrimSpace(line))
	case err := <-ended:
		t.Fatalf("exec ended before the cancel: %v", err)
	}
	cancel(why)
	err := <-ended
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), why.Error()) || !strings.Contains(err.Error(), "stopped in the sandbox") {
		t.Errorf("cancelled exec: %v; want context.Canceled, its cause and that it was stopped in the sandbox", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d is still there after the cancelled Exec returned (kill -0: %v)", pid, err)
	}

	out, err := c.CallOutcome(t.Context(), req.CallID)
	if err != nil || out.State != contracts.CallDone || out.Method != proto.MethodExec || out.Error != nil {
		t.Fatalf("outcome %+v, %v; want done with a result", out, err)
	}
	var recorded contracts.ExecResult
	if err := json.Unmarshal(out.Result, &recorded); err != nil || recorded.ExitCode != -1 || recorded.TimedOut || !strings.HasSuffix(recorded.Stderr, local.CancelMarker) {
		t.Fatalf("recorded result %s (%v): want exit -1 ending in the cancel marker", out.Result, err)
	}

	type outcome struct {
		res contracts.ExecResult
		err error
	}
	again := make(chan outcome, 1)
	rctx, rcancel := context.WithCancel(t.Context())
	defer rcancel()
	go func() {
		res, err := c.Exec(rctx, req)
		again <- outcome{res, err}
	}()
	select {
	case o := <-again:
		if o.err != nil || o.res.ExitCode != -1 || o.res.Stderr != recorded.Stderr {
			t.Errorf("repeat: %+v, %v; want the recorded cancelled result", o.res, o.err)
		}
	case line := <-pids:
		rcancel()
		<-again
		t.Fatalf("the repeat ran the cancelled command again (pid %s)", strings.TrimSpace(line))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "runs.txt")); err != nil || string(b) != "ran\n" {
		t.Errorf("runs.txt = %q, %v; want one run", b, err)
	}
	if stopped, err := c.CancelCall(t.Context(), req.CallID); err != nil || stopped {
		t.Errorf("cancelling a finished call: %v, %v; want nothing to stop", stopped, err)
	}
}

// A cancel that overtakes its call (it reaches sandboxd first) still stops
// it: the call, when it arrives, ends cancelled without running. A write
// fails with a "cancelled" error, which is its recorded outcome.
func TestCancelOvertakesTheCall(t *testing.T) {
	dir := t.TempDir()
	url := serve(t, server.Config{Workspace: dir, StateDir: t.TempDir()})
	c := newClient(t, url, remote.Options{})
	ctx := t.Context()
	for _, id := range []string{"call-early", "call-w"} {
		if stopped, err := c.CancelCall(ctx, id); err != nil || stopped {
			t.Fatalf("cancel of %s before it runs: %v, %v", id, stopped, err)
		}
	}
	res, err := c.Exec(ctx, contracts.ExecRequest{Command: "echo ran >> runs.txt", CallID: "call-early"})
	if err != nil || res.ExitCode != -1 || res.Stderr != local.CancelMarker {
		t.Errorf("exec after its cancel: %+v, %v; want the cancelled result", res, err)
	}
	err = c.WriteFile(ctx, contracts.WriteFileRequest{Path: "w.txt", Content: "x", CallID: "call-w"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("write after its cancel: %v; want context.Canceled", err)
	}
	if out, err := c.CallOutcome(ctx, "call-w"); err != nil || out.State != contracts.CallDone || out.Error == nil || out.Error.Code != proto.CodeCancelled {
		t.Errorf("write outcome %+v, %v; want done, cancelled", out, err)
	}
	for _, name := range []string{"runs.txt", "w.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): a call ran after its cancel", name, err)
		}
	}
	if _, err := c.CancelCall(ctx, ""); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("empty id: %v", err)
	}
}
