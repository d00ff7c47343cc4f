package isolate

import (
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

	"golang.org/x/sys/unix"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

const fanOut = `
def main(input):
    parts = map(lambda p: start("part " + p), input["parts"])
    return agent("join " + ",".join([r.output for r in parts])).output
`

// TestRoundTrip: the subprocess answers exactly what the in-process
// evaluation does, for each step of a run.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	r := &Runner{Command: testIsolate(), Timeout: hangGuard}
	req := contracts.EvalRequest{Script: fanOut, RunID: "run_rt", Input: json.RawMessage(`{"parts": ["a", "b", "c"]}`),
		Now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Results: map[string]contracts.NodeResult{}}
	for i := 0; ; i++ {
		got, err := r.Evaluate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		want := script.Evaluate(context.Background(), req)
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Fatalf("evaluation %d:\nisolate    %s\nin process %s", i, gj, wj)
		}
		if got.Status != contracts.EvalPending {
			if got.Status != contracts.EvalDone || string(got.Value) != `"joined"` {
				t.Fatalf("final: %s", gj)
			}
			return
		}
		for _, p := range got.Pending {
			out := "x"
			if strings.HasPrefix(p.Spec.Prompt, "join") {
				out = "joined"
			}
			req.Results[p.ID] = contracts.NodeResult{OK: true, Output: out}
		}
	}
}

// TestChildEnvironmentIsEmpty: nothing of the runner's environment reaches
// the isolate.
func TestChildEnvironmentIsEmpty(t *testing.T) {
	t.Parallel()
	if len(os.Environ()) == 0 {
		t.Skip("the test itself runs without an environment")
	}
	resp := runIsolate(t, Runner{Command: testIsolate("env")}, "result = 1\n", 0)
	if resp.Status != contracts.EvalDone || string(resp.Value) != `""` {
		t.Fatalf("the isolate saw an environment: %s %s", resp.Status, resp.Value)
	}
}

func TestRunnerFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		runner Runner
		reason string
	}{
		{"unparsable output", Runner{Command: testIsolate("garbage")}, "isolate output unparsable"},
		{"oversized output", Runner{Command: testIsolate("flood"), MaxOutput: 1 << 20}, "isolate output exceeded 1048576 bytes"},
		{"non-zero exit", Runner{Command: testIsolate("exit3")}, "isolate exited with status 3: something broke"},
		{"unknown mode", Runner{Command: testIsolate("nope")}, "isolate exited with status 2: unknown mode nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantFailed(t, runIsolate(t, tt.runner, "result = 1\n", 0), tt.reason)
		})
	}
}

// TestWallClockKill: a hanging isolate is killed at the timeout, with the
// process it started in its group. The limit fires on an event, not after
// a margin: once the isolate has started its child (it writes the child's
// pid into a FIFO the test reads), so a slow start-up on a loaded machine
// can neither beat the timer nor be mistaken for a survivor; and the test
// then waits for the child's exit itself, which on a saturated machine
// comes some time after the SIGKILL is sent. (The real timer is
// TestThreats' "infinite loop: wall clock".)
func TestWallClockKill(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	pids := make(chan string, 1)
	var limit time.Duration
	r := Runner{Command: testIsolate("hang", fifo), Timeout: 2 * time.Second,
		wallClock: func(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
			limit = d
			ctx, cancel := context.WithTimeout(ctx, hangGuard)
			go func() {
				// Blocks until the isolate opens the FIFO to write its child's pid.
				raw, err := os.ReadFile(fifo)
				if err != nil {
					raw = []byte(err.Error())
				}
				pids <- string(raw)
				cancel() // the wall-clock limit: now
			}()
			return ctx, cancel
		}}
	resp := runIsolate(t, r, "result = 1\n", 0)
	var raw string
	select {
	case raw = <-pids:
	default:
		unblockFIFO(fifo)
		t.Fatalf("the hanging isolate ended (%s: %s) without starting its child", resp.Status, resp.Error)
	}
	wantFailed(t, resp, "isolate timed out after 2s (wall clock)")
	if limit != 2*time.Second {
		t.Errorf("wall-clock limit %s, want the Runner's Timeout (2s)", limit)
	}
	pid, err := strconv.Atoi(raw)
	if err != nil {
		t.Fatalf("child pid %q: %v", raw, err)
	}
	if !exits(t, pid) {
		t.Errorf("the isolate's child %d survived the kill", pid)
	}
}

// hangGuard bounds what should end much sooner (a killed process's exit, a
// limit other than the wall clock): far past anything a passing test
// waits on a saturated machine, it only turns a hang into a failure.
const hangGuard = 5 * time.Minute

// exits waits for process pid to end (a zombie has ended) and reports
// whether it did within hangGuard: the event of its exit through a pidfd,
// which is readable once the process has exited (it need not be our
// child), or where pidfds are unavailable by polling /proc a bounded
// number of times.
func exits(t *testing.T, pid int) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return true // gone, and reaped
	case err == nil:
		defer unix.Close(fd)
		for {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(hangGuard/time.Millisecond))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				t.Fatalf("polling the pidfd of %d: %v", pid, err)
			}
			return n == 1
		}
	}
	t.Logf("no pidfd (%v): polling /proc/%d", err, pid)
	const step = 10 * time.Millisecond
	for range int(hangGuard / step) {
		if !alive(pid) {
			return true
		}
		time.Sleep(step)
	}
	return false
}

// unblockFIFO lets a reader blocked opening fifo go: it opens it for
// writing without blocking and closes it (the reader reads EOF).
func unblockFIFO(fifo string) {
	if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
		unix.Close(fd)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestRunnerErrors(t *testing.T) {
	t.Parallel()
	t.Run("cannot start", func(t *testing.T) {
		r := &Runner{Command: []string{filepath.Join(binDir, "missing")}}
		if _, err := r.Evaluate(context.Background(), contracts.EvalRequest{Script: "result = 1\n"}); err == nil {
			t.Fatal("no error for a missing isolate")
		}
	})
	t.Run("no command", func(t *testing.T) {
		if _, err := (&Runner{}).Evaluate(context.Background(), contracts.EvalRequest{}); err == nil {
			t.Fatal("no error without a command")
		}
	})
	t.Run("caller's context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		r := &Runner{Command: testIsolate("hang", filepath.Join(t.TempDir(), "pid"))}
		_, err := r.Evaluate(ctx, contracts.EvalRequest{Script: "result = 1\n"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the caller's deadline (a retry, not the run's failure)", err)
		}
	})
	t.Run("request too large", func(t *testing.T) {
		big := json.RawMessage(`"` + strings.Repeat("x", MaxRequestBytes) + `"`)
		resp, err := (&Runner{Command: testIsolate()}).Evaluate(context.Background(), contracts.EvalRequest{Script: "result = 1\n", Input: big})
		if err != nil {
			t.Fatal(err)
		}
		wantFailed(t, resp, "evaluation request too large")
	})
}

func TestRequestIsAnEvalRequest(t *testing.T) {
	raw, _ := json.Marshal(Request{EvalRequest: contracts.EvalRequest{Script: "s", RunID: "r"}, Limits: Limits{MemoryMiB: 64}})
	if string(raw) != `{"script":"s","run_id":"r","now":"0001-01-01T00:00:00Z","limits":{"memory_mib":64}}` {
		t.Fatalf("request %s", raw)
	}
	var plain contracts.EvalRequest
	if err := json.Unmarshal(raw, &plain); err != nil || plain.Script != "s" {
		t.Fatalf("not readable as an EvalRequest: %v %+v", err, plain)
	}
}
