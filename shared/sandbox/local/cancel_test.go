package local

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

// startBlocked runs a command of callID on l that reports its pid through
// a FIFO and then sleeps; it returns the pid and the call's end.
func startBlocked(t *testing.T, l *Sandbox, callID string) (int, <-chan contracts.ExecResult, <-chan error) {
	t.Helper()
	path := filepath.Join(l.Root(), "pid.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0) // never waits, nor does the command's write
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	results, errs := make(chan contracts.ExecResult, 1), make(chan error, 1)
	go func() {
		res, err := l.Exec(context.Background(), contracts.ExecRequest{Command: "echo out; echo $$ > pid.fifo; exec sleep 300", CallID: callID, Timeout: 5 * time.Minute})
		results <- res
		errs <- err
	}()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return pid, results, errs
}

// CancelCall kills a running call and returns once it has ended; with a
// ledger the call is recorded as cancelled, so a repeat returns that.
func TestCancelCall(t *testing.T) {
	for _, withLedger := range []bool{true, false} {
		state := filepath.Join(t.TempDir(), "state")
		l := ledgered(t, state, 0)
		if !withLedger {
			l = newLocal(t, Options{Env: []string{"PATH=" + os.Getenv("PATH")}})
		}
		pid, results, errs := startBlocked(t, l, "call-c")
		stopped, err := l.CancelCall(context.Background(), "call-c")
		if err != nil || !stopped {
			t.Fatalf("ledger %v: CancelCall: %v, %v", withLedger, stopped, err)
		}
		// CancelCall returned: the process is reaped, the outcome recorded.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("ledger %v: pid %d after CancelCall: %v", withLedger, pid, err)
		}
		res, err := <-results, <-errs
		if err != nil || res.ExitCode != -1 || res.TimedOut || res.Stdout != "out\n" || res.Stderr != CancelMarker {
			t.Fatalf("ledger %v: cancelled call: %+v, %v", withLedger, res, err)
		}
		o, err := l.CallOutcome(context.Background(), "call-c")
		if want := map[bool]contracts.CallState{true: contracts.CallDone, false: contracts.CallUnknown}[withLedger]; err != nil || o.State != want {
			t.Fatalf("ledger %v: outcome %+v, %v; want %s", withLedger, o, err, want)
		}
		if stopped, err := l.CancelCall(context.Background(), "call-c"); err != nil || stopped {
			t.Errorf("ledger %v: a second cancel: %v, %v; want nothing to stop", withLedger, stopped, err)
		}
	}
}

// Only a CancelCall is recorded: a call whose own context ends stays
// unknown (TestCancelledCallIsNotRecorded), and the remembered ids of
// cancels that found nothing running are bounded.
func TestOvertakenCancelsBounded(t *testing.T) {
	l := newLocal(t, Options{})
	for i := range maxOvertaken + 10 {
		if stopped, err := l.CancelCall(context.Background(), "call-"+strconv.Itoa(i)); err != nil || stopped {
			t.Fatal(stopped, err)
		}
	}
	if n, m := len(l.running.order), len(l.running.overtaken); n != maxOvertaken || m != maxOvertaken {
		t.Fatalf("%d, %d overtaken ids kept, want %d", n, m, maxOvertaken)
	}
	if l.running.overtaken["call-0"] || !l.running.overtaken["call-"+strconv.Itoa(maxOvertaken+9)] {
		t.Fatal("the oldest overtaken ids are not the ones forgotten")
	}
}
