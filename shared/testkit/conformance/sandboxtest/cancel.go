package sandboxtest

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// testExecCancelKills: cancelling the context of a running command — with
// a call id, as the tools phase gives every call — kills it, in every
// placement: by the time Exec returns its error (matching
// context.Canceled) the command's process is gone. A sandbox whose ledger
// then says the call is done (it recorded the cancellation) never runs it
// again; one that says unknown (the local sandbox: a call stopped by its
// context has no outcome) is not asked to.
func testExecCancelKills(t *testing.T, s *suite) {
	pids := fifoLines(t, s.host("pid.fifo"))
	req := contracts.ExecRequest{
		Command: "echo ran >> runs.txt; echo $$ > pid.fifo; exec sleep 300",
		CallID:  "call-cancel",
		Timeout: 5 * time.Minute, // the cancel, not the timeout, ends it
	}
	type outcome struct {
		res contracts.ExecResult
		err error
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	ended := make(chan outcome, 1)
	go func() {
		res, err := s.api.Exec(ctx, req)
		ended <- outcome{res, err}
	}()
	var pid int
	select {
	case line := <-pids:
		var err error
		if pid, err = strconv.Atoi(strings.TrimSpace(line)); err != nil || pid <= 0 {
			t.Fatalf("pid line %q", line)
		}
	case o := <-ended:
		t.Fatalf("the command ended before it was cancelled: %+v, %v", o.res, o.err)
	}
	cancel()
	o := <-ended
	wantErr(t, "cancelled exec", o.err, context.Canceled)
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d is still there after the cancelled Exec returned (kill -0: %v)", pid, err)
	}

	ledger, ok := s.api.(contracts.CallLedger)
	if !ok {
		return
	}
	out, err := ledger.CallOutcome(s.ctx, req.CallID)
	noErr(t, "call outcome", err)
	switch out.State {
	case contracts.CallUnknown:
		return
	case contracts.CallDone:
	default:
		t.Fatalf("after the cancelled Exec returned the call is %q, want done or unknown", out.State)
	}
	again := make(chan outcome, 1)
	rctx, rcancel := context.WithCancel(s.ctx)
	defer rcancel()
	go func() {
		res, err := s.api.Exec(rctx, req)
		again <- outcome{res, err}
	}()
	select {
	case o = <-again:
	case line := <-pids:
		rcancel()
		<-again
		t.Fatalf("the repeat of a call recorded as done ran it again (pid %s)", strings.TrimSpace(line))
	}
	if o.err == nil && o.res.ExitCode == 0 {
		t.Errorf("the repeat of a cancelled call succeeded: %+v", o.res)
	}
	if got := s.content(t, "runs.txt"); got != "ran\n" {
		t.Errorf("runs.txt = %q: the cancelled call ran again", got)
	}
}

// fifoLines creates a FIFO at path and returns the lines written to it.
// The FIFO is held open for reading and writing until the test ends, so
// neither opening it nor a command's write to it ever waits.
func fifoLines(t *testing.T, path string) <-chan string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	// Writable by the commands' user, whoever it is: run as root, a
	// sandbox runs its commands as another one (nobody).
	noErr(t, "opening the FIFO to the commands", os.Chmod(path, 0o666))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	noErr(t, "opening the FIFO", err)
	t.Cleanup(func() { f.Close() })
	lines := make(chan string, 16) // a test reads a line or two
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
