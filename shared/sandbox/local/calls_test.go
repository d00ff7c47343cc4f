package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

func ledgered(t *testing.T, state string, maxCalls int) *Sandbox {
	t.Helper()
	l, err := New(filepath.Join(filepath.Dir(state), "ws"), Options{StateDir: state, MaxCalls: maxCalls, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func lines(t *testing.T, l *Sandbox, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.Root(), name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestExecWithCallIDRunsOnce(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "state")
	l := ledgered(t, state, 0)
	req := contracts.ExecRequest{Command: "echo ran >> log.txt; wc -l < log.txt", CallID: "call-1"}
	first, err := l.Exec(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Exec(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// A new Sandbox on the same state (a restarted sandboxd) replays too.
	restarted, err := ledgered(t, state, 0).Exec(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := lines(t, l, "log.txt"); n != 1 {
		t.Fatalf("command ran %d times, want 1", n)
	}
	if again.Stdout != first.Stdout || restarted.Stdout != first.Stdout || strings.TrimSpace(first.Stdout) != "1" {
		t.Fatalf("replayed %q and %q, first %q", again.Stdout, restarted.Stdout, first.Stdout)
	}
	o, err := l.CallOutcome(ctx, "call-1")
	if err != nil || o.State != contracts.CallDone || o.Method != "exec" || !strings.Contains(string(o.Result), `"stdout":"1\n"`) {
		t.Fatalf("outcome %+v %s, %v", o, o.Result, err)
	}
	// Without a call id nothing is recorded: it runs every time.
	for range 2 {
		if _, err := l.Exec(ctx, contracts.ExecRequest{Command: "echo ran >> log.txt"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := lines(t, l, "log.txt"); n != 3 {
		t.Fatalf("log has %d lines, want 3", n)
	}
}

func TestConcurrentRepeatsRunOnce(t *testing.T) {
	l := ledgered(t, filepath.Join(t.TempDir(), "state"), 0)
	req := contracts.ExecRequest{Command: "echo ran >> log.txt; sleep 0.2; echo done", CallID: "call-c"}
	var wg sync.WaitGroup
	outs := make([]contracts.ExecResult, 8)
	errs := make([]error, 8)
	for i := range outs {
		wg.Go(func() { outs[i], errs[i] = l.Exec(context.Background(), req) })
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil || outs[i].Stdout != "done\n" {
			t.Fatalf("caller %d: %+v, %v", i, outs[i], errs[i])
		}
	}
	if n := lines(t, l, "log.txt"); n != 1 {
		t.Fatalf("command ran %d times, want 1", n)
	}
}

func TestCallOutcomeWhileRunning(t *testing.T) {
	ctx := context.Background()
	l := ledgered(t, filepath.Join(t.TempDir(), "state"), 0)
	if o, _ := l.CallOutcome(ctx, "call-r"); o.State != contracts.CallUnknown {
		t.Fatalf("before: %s", o.State)
	}
	go l.Exec(ctx, contracts.ExecRequest{Command: "touch started; while [ ! -f go ]; do sleep 0.01; done; echo ok", CallID: "call-r"})
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(l.Root(), "started")); return err == nil })
	if o, _ := l.CallOutcome(ctx, "call-r"); o.State != contracts.CallRunning {
		t.Fatalf("during: %s", o.State)
	}
	if err := os.WriteFile(filepath.Join(l.Root(), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { o, _ := l.CallOutcome(ctx, "call-r"); return o.State == contracts.CallDone })
}

func TestRecordedErrorKeepsItsMeaning(t *testing.T) {
	ctx := context.Background()
	l := ledgered(t, filepath.Join(t.TempDir(), "state"), 0)
	req := contracts.EditFileRequest{Path: "missing.txt", Old: "a", New: "b", CallID: "call-e"}
	_, first := l.EditFile(ctx, req)
	if !errors.Is(first, contracts.ErrNotFound) {
		t.Fatalf("first: %v", first)
	}
	_, again := l.EditFile(ctx, req)
	if !errors.Is(again, contracts.ErrNotFound) || again.Error() != first.Error() {
		t.Fatalf("replayed %v, first %v", again, first)
	}
	// The same id with another request is a conflict, not a replay.
	if _, err := l.EditFile(ctx, contracts.EditFileRequest{Path: "other.txt", Old: "a", New: "b", CallID: "call-e"}); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("different request: %v", err)
	}
	if err := l.WriteFile(ctx, contracts.WriteFileRequest{Path: "w.txt", Content: "x\n", Append: true, CallID: "call-w"}); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteFile(ctx, contracts.WriteFileRequest{Path: "w.txt", Content: "x\n", Append: true, CallID: "call-w"}); err != nil {
		t.Fatal(err)
	}
	if n := lines(t, l, "w.txt"); n != 1 {
		t.Fatalf("append ran %d times", n)
	}
}

func TestLedgerIsBounded(t *testing.T) {
	ctx := context.Background()
	l := ledgered(t, filepath.Join(t.TempDir(), "state"), 3)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if _, err := l.Exec(ctx, contracts.ExecRequest{Command: "true", CallID: id}); err != nil {
			t.Fatal(err)
		}
	}
	known := 0
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if o, _ := l.CallOutcome(ctx, id); o.State == contracts.CallDone {
			known++
		}
	}
	if known != 3 {
		t.Fatalf("%d outcomes kept, want 3", known)
	}
	if o, _ := l.CallOutcome(ctx, "e"); o.State != contracts.CallDone {
		t.Fatal("newest outcome forgotten")
	}
}

func TestCancelledCallIsNotRecorded(t *testing.T) {
	l := ledgered(t, filepath.Join(t.TempDir(), "state"), 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Exec(ctx, contracts.ExecRequest{Command: "true", CallID: "call-x"}); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if o, _ := l.CallOutcome(context.Background(), "call-x"); o.State != contracts.CallUnknown {
		t.Fatalf("cancelled call recorded as %s", o.State)
	}
}

// waitFor polls cond, which a command under test makes true, until it
// holds; hangGuard only turns a hang into a failure.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	const step = 5 * time.Millisecond
	for range int(hangGuard / step) {
		if cond() {
			return
		}
		time.Sleep(step)
	}
	t.Fatalf("condition not reached in %s", hangGuard)
}

// Two sandboxes on one state directory (two Locals of a session, or two
// sandboxd) still run a call once: the call's lock is a file lock.
func TestRepeatsAcrossInstancesRunOnce(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	a, b := ledgered(t, state, 0), ledgered(t, state, 0)
	req := contracts.ExecRequest{Command: "echo ran >> log.txt; sleep 0.2; echo done", CallID: "call-x"}
	var wg sync.WaitGroup
	for _, l := range []*Sandbox{a, b, a, b} {
		wg.Go(func() {
			if res, err := l.Exec(context.Background(), req); err != nil || res.Stdout != "done\n" {
				t.Errorf("%+v, %v", res, err)
			}
		})
	}
	wg.Wait()
	if n := lines(t, a, "log.txt"); n != 1 {
		t.Fatalf("command ran %d times, want 1", n)
	}
}

// A failure of the host's own (here: no such shell) is not an outcome of
// the call: it stays unknown, so a retry may run it.
func TestHostFailuresAreNotRecorded(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	l, err := New(filepath.Join(t.TempDir(), "ws"), Options{StateDir: state, Shell: "/nonexistent/shell"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Exec(context.Background(), contracts.ExecRequest{Command: "true", CallID: "call-h"}); err == nil {
		t.Fatal("a missing shell ran")
	}
	if o, _ := l.CallOutcome(context.Background(), "call-h"); o.State != contracts.CallUnknown {
		t.Fatalf("host failure recorded as %s", o.State)
	}
	long := strings.Repeat("x", MaxCallID+1)
	if _, err := l.Exec(context.Background(), contracts.ExecRequest{Command: "true", CallID: long}); !errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("an over-long call id: %v", err)
	}
}
