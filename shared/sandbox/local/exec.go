package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/cairnrun/cairn/shared/contracts"
)

// pipeGrace bounds how long output is still drained after the command's
// process group has been killed: a process that left the group (setsid) may
// hold the pipes open, and must not hang the call.
const pipeGrace = time.Second

// exec runs `Shell -c Command` in the workspace (or Dir, confined) in its own
// process group. At the timeout (Timeout, else DefaultTimeout, clamped to
// MaxTimeout, and the ctx deadline) the whole group is killed: TimedOut,
// ExitCode -1. When ctx is cancelled the group is killed too: an error, or,
// when CancelCall cancelled it, a result (ExitCode -1, CancelMarker ending
// stderr). Processes the command leaves behind in its group — and, with
// cgroup2 containment (contain.go), anywhere — are killed when it exits.
// The command runs under Options.Limits (limits.go); one it hit is named
// by a marker ending stderr. A non-zero exit is a result, not an error.
func (l *Sandbox) exec(ctx context.Context, r contracts.ExecRequest) (contracts.ExecResult, error) {
	if r.Command == "" {
		return contracts.ExecResult{}, fmt.Errorf("exec: empty command: %w", contracts.ErrInvalid)
	}
	host, rel, err := l.resolve(r.Dir)
	if err != nil {
		return contracts.ExecResult{}, err
	}
	fi, err := os.Stat(host)
	if err != nil {
		return contracts.ExecResult{}, l.pathError("exec in", rel, err)
	}
	if !fi.IsDir() {
		return contracts.ExecResult{}, fmt.Errorf("exec in %s: not a directory: %w", rel, contracts.ErrInvalid)
	}
	return l.run(ctx, []string{l.opts.Shell, "-c", r.Command}, host, r.Stdin, r.Timeout, r.Traceparent)
}

// runScript runs Source with the interpreter for Language ("python" or
// "python3": `Python -` with the source on stdin) in the workspace root,
// under the same rules as Exec.
func (l *Sandbox) runScript(ctx context.Context, r contracts.RunScriptRequest) (contracts.ExecResult, error) {
	switch r.Language {
	case "python", "python3":
		return l.run(ctx, []string{l.opts.Python, "-"}, l.root, r.Source, r.Timeout, r.Traceparent)
	}
	return contracts.ExecResult{}, fmt.Errorf("run script: unsupported language %q (supported: python): %w", r.Language, contracts.ErrInvalid)
}

// run starts argv in dir with stdin, waits for it under the timeout and
// collects capped output.
func (l *Sandbox) run(ctx context.Context, argv []string, dir, stdin string, timeout time.Duration, traceparent string) (contracts.ExecResult, error) {
	if int64(len(stdin)) > l.opts.MaxWrite {
		return contracts.ExecResult{}, fmt.Errorf("exec: stdin of %d bytes exceeds the %d-byte limit: %w", len(stdin), l.opts.MaxWrite, contracts.ErrTooLarge)
	}
	if timeout <= 0 {
		timeout = l.opts.DefaultTimeout
	}
	timeout = min(timeout, l.opts.MaxTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := ctx.Err(); errors.Is(err, context.Canceled) { // stopped before it started: it does not start
		if cancelRequested(ctx) {
			return cancelledResult(contracts.ExecResult{}), nil
		}
		return contracts.ExecResult{}, fmt.Errorf("exec: %w", err)
	}

	if c := l.opts.Credential; c != nil { // resolved as the commands' user would
		argv = append([]string{lookPathAs(argv[0], l.env, c)}, argv[1:]...)
	}
	in, err := stdinFile(stdin)
	if err != nil {
		return contracts.ExecResult{}, err
	}
	if in != nil {
		defer in.Close()
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return contracts.ExecResult{}, fmt.Errorf("exec: stdout pipe: %w", err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return contracts.ExecResult{}, fmt.Errorf("exec: stderr pipe: %w", err)
	}
	defer errR.Close()

	// The call's cgroup (containment "cgroup2"), and the wrapper that sets
	// its rlimits (limits.go).
	lim := l.opts.Limits
	hg := groups()
	var g *callGroup
	if l.contain == ContainCgroup2 {
		g = hg.newCallGroup(lim, l.opts.Credential)
	}
	reaped := g == nil && l.contain == ContainSubreaper
	newCmd := func(g *callGroup) *exec.Cmd {
		cmd := l.command(argv, dir, hg, g, reaped)
		if traceParent.MatchString(traceparent) {
			cmd.Env = append(cmd.Env, "TRACEPARENT="+traceparent) // cmd.Env is a clipped copy: this appends to a new array
		}
		cmd.Stdout = outW
		cmd.Stderr = errW
		if in != nil {
			cmd.Stdin = in
		}
		return cmd
	}
	cmd := newCmd(g)
	rec := startRecorder(ctx)
	if rec != nil && g != nil { // before it starts: a runner dying at any moment leaves its cgroup named
		rec(startRecord{Cgroups: g.describe()})
	}

	start := time.Now()
	err = cmd.Start()
	if err != nil && g != nil { // the host refused the clone into the cgroup: contain by process group
		g.kill()
		g = nil
		if in != nil {
			_, _ = in.Seek(0, io.SeekStart)
		}
		cmd = newCmd(nil)
		err = cmd.Start()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		g.kill()
		return contracts.ExecResult{}, fmt.Errorf("exec: starting %s: %w", argv[0], err)
	}
	pgid := cmd.Process.Pid
	defer g.kill() // on every return; the normal path kills it below, before draining
	if rec != nil {
		st, _, _ := procStart(pgid)
		rec(startRecord{Pgid: pgid, Start: st, Cgroups: g.describe()})
	}

	stdout := make(chan capped, 1)
	stderr := make(chan capped, 1)
	go func() { stdout <- drain(outR, l.opts.OutputCap) }()
	go func() { stderr <- drain(errR, l.opts.OutputCap) }()

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var waitErr error
	var stopped error // why the group was killed early, if it was
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		if reaped {
			// The reaper kills all it adopted, then exits; a SIGKILL
			// would hand its orphans to our parent instead.
			_ = syscall.Kill(pgid, syscall.SIGTERM)
		} else {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		waitErr = <-waited
		stopped = ctx.Err()
	}
	timedOut := errors.Is(stopped, context.DeadlineExceeded)
	// Whatever the command left running in its group — and, with a cgroup,
	// anywhere (setsid, double fork, job control) — goes too, so nothing
	// outlives the call or holds the pipes open.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	oomKills, pidsMax := g.event("memory.events", "oom_kill"), g.event("pids.events", "max")
	g.kill()
	deadline := time.Now().Add(pipeGrace)
	_ = outR.SetReadDeadline(deadline)
	_ = errR.SetReadDeadline(deadline)
	o, e := <-stdout, <-stderr
	duration := time.Since(start)

	cancelled := stopped != nil && !timedOut && cancelRequested(ctx)
	if stopped != nil && !timedOut && !cancelled {
		return contracts.ExecResult{}, fmt.Errorf("exec: %w", stopped)
	}
	res := contracts.ExecResult{
		Stdout:    o.text,
		Stderr:    e.text,
		TimedOut:  timedOut,
		Truncated: o.truncated || e.truncated,
		Duration:  duration,
	}
	switch {
	case timedOut:
		res.ExitCode = -1
	case cancelled:
		res = cancelledResult(res)
	case waitErr == nil:
		res.ExitCode = 0
	default:
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return contracts.ExecResult{}, fmt.Errorf("exec: waiting for %s: %w", argv[0], waitErr)
		}
		res.ExitCode = exitCode(ee.ProcessState)
	}
	if !timedOut && !cancelled {
		pidsCg, memCg := hg.limitsIn(g)
		if m := limitHit(lim, res.ExitCode, cmd.ProcessState, oomKills, pidsMax, pidsCg, memCg, res.Stderr); m != "" {
			res.Stderr = withMarker(res.Stderr, m)
		}
	}
	if err := l.checkWorkspace(0); err != nil {
		res.Stderr = withMarker(res.Stderr, LimitMarker("workspace_mib", lim.WorkspaceMiB, " MiB"))
		if res.ExitCode == 0 {
			res.ExitCode = 1
		}
	}
	return res, nil
}

// traceParent is a W3C traceparent (version 00, lower-case hex).
var traceParent = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// command is argv as the sandbox runs it in dir: under the limits wrapper
// (limits.go), the reaper when reaped, in cgroup g when set, in its own
// process group, as the commands' user, with the sandbox's environment.
// Its standard streams are the caller's to set.
func (l *Sandbox) command(argv []string, dir string, hg *hostGroups, g *callGroup, reaped bool) *exec.Cmd {
	args := argv
	pidsCg, memCg := hg.limitsIn(g)
	pidsV1 := ""
	if g != nil {
		pidsV1 = g.pidsV1
	}
	if script := wrapScript(l.opts.Limits, pidsCg, memCg, pidsV1); script != "" {
		args = append([]string{l.opts.Shell, "-c", script, "cairn-limits"}, argv...)
	}
	var cmd *exec.Cmd
	if reaped {
		cmd = exec.Command("/proc/self/exe", append([]string{reaperArg}, args...)...)
		cmd.Args[0] = "cairn-sandbox-reaper"
	} else {
		cmd = exec.Command(args[0], args[1:]...)
	}
	cmd.Dir = dir
	cmd.Env = slices.Clip(l.env) // shared by concurrent calls: never appended to in place
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.SysProcAttr.Credential = l.opts.Credential // RunAs (sandboxd as root): nil = the sandbox's own user
	if g != nil {
		intoCgroup(cmd.SysProcAttr, int(g.fd.Fd()))
	}
	return cmd
}

// exitCode follows the shell convention: 128+n for a death by signal n.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// stdinFile returns an unlinked temp file (outside the workspace) holding
// stdin, or nil for none. A file, unlike a pipe fed by a goroutine, can never
// block the call when the command does not read it.
func stdinFile(stdin string) (*os.File, error) {
	if stdin == "" {
		return nil, nil
	}
	f, err := os.CreateTemp("", "cairn-stdin-*")
	if err != nil {
		return nil, fmt.Errorf("exec: stdin file: %w", err)
	}
	os.Remove(f.Name())
	if _, err := io.WriteString(f, stdin); err != nil {
		f.Close()
		return nil, fmt.Errorf("exec: writing stdin file: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("exec: rewinding stdin file: %w", err)
	}
	return f, nil
}

// capped is one stream's output, capped with a marker.
type capped struct {
	text      string
	truncated bool
}

// drain reads r to the end (or until its read deadline), keeping the first
// limit bytes (cut back to a UTF-8 boundary) and counting the rest, so the
// child never blocks on a full pipe.
func drain(r io.Reader, limit int) capped {
	buf := make([]byte, 0, min(limit, 64<<10))
	chunk := make([]byte, 32<<10)
	var omitted int64
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			room := limit - len(buf)
			if room >= n {
				buf = append(buf, chunk[:n]...)
			} else {
				if room > 0 {
					buf = append(buf, chunk[:room]...)
				}
				omitted += int64(n - max(room, 0))
			}
		}
		if err != nil {
			break
		}
	}
	if omitted == 0 {
		return capped{text: string(buf)}
	}
	keep := utf8Boundary(buf)
	omitted += int64(len(buf) - keep)
	return capped{
		text:      string(buf[:keep]) + fmt.Sprintf("\n[output truncated: %d bytes omitted]", omitted),
		truncated: true,
	}
}

// utf8Boundary returns the length of b without a trailing incomplete rune.
func utf8Boundary(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}
