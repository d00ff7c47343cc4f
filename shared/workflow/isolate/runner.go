package isolate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

const (
	// DefaultTimeout is a Runner's wall-clock limit per evaluation.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxOutput caps what a Runner reads from the isolate.
	DefaultMaxOutput = 2 << 20
	// maxStderr is how much of the isolate's stderr is kept for reasons.
	maxStderr = 64 << 10
)

// Runner evaluates scripts in a subprocess (`cairn isolate`, see Main): an
// empty environment, "/" as its directory, the request as its only input,
// its own process group (killed at the wall-clock Timeout, when output
// passes MaxOutput, and after it exits, so nothing it left survives), and
// the memory and CPU limits passed in the Request it reads (Limits). The
// child is also killed if the runner's process dies.
//
// Every way the isolate can misbehave — timeout, a signal (the memory or
// CPU limit), a non-zero exit, oversized or unparsable output — is an
// EvalResponse{Status: EvalFailed} with a reason and a nil error: a
// script's misbehaviour is its run's failure. The error is non-nil only
// when the isolate could not be started at all, or when ctx ended (the
// caller is going away; retry later, the run has not failed).
type Runner struct {
	Command    []string      // e.g. {os.Executable(), "isolate"}
	Timeout    time.Duration // wall clock per evaluation; DefaultTimeout when zero
	MaxOutput  int64         // bytes of stdout; DefaultMaxOutput when zero
	MemoryMiB  int           // RLIMIT_DATA of the child; DefaultMemoryMiB when zero
	CPUSeconds int           // RLIMIT_CPU of the child; DefaultCPUSeconds when zero

	// wallClock, when set, replaces context.WithTimeout as the wall-clock
	// limit (given Timeout): a test fires it on an event, once the isolate
	// is known to be running, instead of racing a timer against start-up.
	wallClock func(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

var _ contracts.Evaluator = (*Runner)(nil)

// Evaluate runs one evaluation in a new isolate process.
func (r *Runner) Evaluate(ctx context.Context, req contracts.EvalRequest) (contracts.EvalResponse, error) {
	if len(r.Command) == 0 {
		return contracts.EvalResponse{}, errors.New("starting the isolate: no command")
	}
	limits := Limits{MemoryMiB: r.MemoryMiB, CPUSeconds: r.CPUSeconds}.withDefaults()
	body, err := json.Marshal(Request{EvalRequest: req, Limits: limits})
	if err != nil {
		return contracts.EvalResponse{}, fmt.Errorf("encoding the isolate request: %w", err)
	}
	if len(body) > MaxRequestBytes {
		return failed("evaluation request too large: %d bytes (script, input and node results) exceed %d", len(body), MaxRequestBytes), nil
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	maxOut := r.MaxOutput
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	withTimeout := context.WithTimeout
	if r.wallClock != nil {
		withTimeout = r.wallClock
	}
	runCtx, cancel := withTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(runCtx, r.Command[0], r.Command[1:]...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(body)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	killGroup := func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.Cancel = killGroup
	cmd.WaitDelay = time.Second
	stdout := &capWriter{max: maxOut, overflow: func() { _ = killGroup() }}
	stderr := &capWriter{max: maxStderr, keepReading: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	// Pdeathsig fires when the thread that started the child exits: keep
	// this goroutine on its thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return contracts.EvalResponse{}, fmt.Errorf("starting the isolate %s: %w", r.Command[0], err)
	}
	waitErr := cmd.Wait()
	_ = killGroup() // whatever it left behind in its group

	switch {
	case stdout.overflowed():
		return failed("isolate output exceeded %d bytes", maxOut), nil
	case ctx.Err() != nil:
		return contracts.EvalResponse{}, fmt.Errorf("isolate evaluation interrupted: %w", context.Cause(ctx))
	case runCtx.Err() != nil:
		return failed("isolate timed out after %s (wall clock)", timeout), nil
	}
	if waitErr != nil {
		return failed("%s", exitReason(cmd, waitErr, stderr.String(), limits)), nil
	}
	return DecodeResponse(stdout.Bytes()), nil
}

// exitReason says why an isolate process that wrote no response ended.
func exitReason(cmd *exec.Cmd, waitErr error, stderr string, l Limits) string {
	ps := cmd.ProcessState
	if ps == nil {
		return fmt.Sprintf("isolate failed: %v", waitErr)
	}
	cpu := ps.UserTime() + ps.SystemTime()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if (ws.Signal() == syscall.SIGKILL || ws.Signal() == syscall.SIGXCPU) && cpu >= time.Duration(l.CPUSeconds)*time.Second {
			return fmt.Sprintf("CPU time limit exceeded (%d s)", l.CPUSeconds)
		}
		return fmt.Sprintf("isolate killed (%v) after %s of CPU time", ws.Signal(), cpu.Round(time.Millisecond))
	}
	first := firstFatalLine(stderr)
	switch {
	case strings.Contains(first, "out of memory"), strings.Contains(first, "cannot allocate memory"):
		return fmt.Sprintf("memory limit exceeded (%d MiB): the isolate ran out of memory (%s)", l.MemoryMiB, first)
	case strings.Contains(first, "stack exceeds"), strings.Contains(first, "stack overflow"):
		return fmt.Sprintf("stack overflow in the isolate: a value nested too deeply (%s)", first)
	case strings.HasPrefix(first, "SIGSEGV"), strings.HasPrefix(first, "unexpected signal"):
		// The Go runtime faults like this when an allocation fails at
		// RLIMIT_DATA; pure Go evaluating Starlark has no other cause.
		return fmt.Sprintf("memory limit exceeded (%d MiB): the isolate crashed allocating (%s)", l.MemoryMiB, first)
	}
	return fmt.Sprintf("isolate exited with status %d: %s", ps.ExitCode(), first)
}

// firstFatalLine picks the line of a crash report that names the cause.
func firstFatalLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime:") ||
			strings.HasPrefix(l, "isolate:") || strings.HasPrefix(l, "SIGSEGV") || strings.HasPrefix(l, "unexpected signal") {
			return l
		}
	}
	if len(lines) > 0 && lines[0] != "" {
		return truncate(lines[0], 500)
	}
	return "no output"
}

// DecodeResponse reads an isolate's output: exactly one EvalResponse with
// a known status. Anything else is an EvalFailed response saying so (the
// isolate misbehaved; the run fails, the caller does not).
func DecodeResponse(out []byte) contracts.EvalResponse {
	var resp contracts.EvalResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&resp); err != nil {
		return failed("isolate output unparsable: %v", err)
	}
	if dec.More() {
		return failed("isolate output unparsable: more than one response")
	}
	switch resp.Status {
	case contracts.EvalDone, contracts.EvalPending, contracts.EvalFailed:
		return resp
	}
	return failed("isolate output has an unknown status %q", truncate(resp.Status, 100))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// capWriter keeps up to max bytes. Past that it drops the rest and calls
// overflow once; then it either fails the write (the copy stops) or, with
// keepReading, swallows it (so a long crash report never blocks the child).
type capWriter struct {
	mu          sync.Mutex
	buf         bytes.Buffer
	max         int64
	over        bool
	keepReading bool
	overflow    func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - int64(w.buf.Len()); !w.over && int64(len(p)) > room {
		w.buf.Write(p[:max(room, 0)])
		w.over = true
		if w.overflow != nil {
			w.overflow()
		}
	}
	switch {
	case !w.over:
		return w.buf.Write(p)
	case w.keepReading:
		return len(p), nil
	}
	return 0, errOutputCap
}

var errOutputCap = errors.New("output cap reached")

func (w *capWriter) overflowed() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.over }
func (w *capWriter) Bytes() []byte    { w.mu.Lock(); defer w.mu.Unlock(); return w.buf.Bytes() }
func (w *capWriter) String() string   { return string(w.Bytes()) }
