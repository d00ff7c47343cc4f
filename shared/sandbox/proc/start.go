package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
)

// listenPrefix starts the one line sandboxd prints once it listens.
const listenPrefix = "sandboxd listening on "

// scratchPrefix + the sandbox's token ref names an ephemeral workspace
// (spec.sandbox.workspace "ephemeral") in the session's directory.
const scratchPrefix = "workspace-"

// child is a sandboxd this provider started. done is closed once the
// process has exited and been reaped.
type child struct {
	pid     int
	session string
	dir     string // the session's directory (its pid file)
	proc    *os.Process
	done    chan struct{}
	err     error  // cmd.Wait's result, set before done closes
	scratch string // an ephemeral workspace, removed once the child exits
}

// start runs a new sandboxd for the session, its commands under the spec's
// limits (SANDBOXD_LIMITS), and returns it with a client that has passed the
// probe, and the record to store. The caller records it or stops the child.
func (p *Provider) start(ctx context.Context, sessionID string, spec contracts.SandboxSpec, fp string) (*child, *remote.Client, *contracts.SandboxRecord, error) {
	dir := filepath.Join(p.cfg.BaseDir, sessionID)
	ref := placement.NewRef()
	ws, state := filepath.Join(dir, "workspace"), filepath.Join(dir, "state")
	scratch := ""
	if spec.Workspace == contracts.WorkspaceEphemeral { // a disk that dies with its sandboxd, as a task's does
		ws = filepath.Join(dir, scratchPrefix+ref)
		scratch = ws
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("creating workspace: %w", err)
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("creating state directory: %w", err)
	}
	if os.Geteuid() == 0 { // sandboxd runs commands as nobody: they must reach the workspace
		if err := searchable(ws); err != nil {
			return nil, nil, nil, err
		}
	}
	logPath := filepath.Join(dir, "sandboxd.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("opening sandboxd log: %w", err)
	}
	defer logf.Close() // the child holds its own descriptor

	token := p.cfg.Tokens.Mint(sessionID, ref)
	idle := p.cfg.IdleTimeout
	if idle < 0 {
		idle = 0 // sandboxd: 0 = never
	}
	// Not CommandContext: the sandbox outlives this call.
	args := append(append([]string(nil), p.cfg.Args...), "--addr", "127.0.0.1:0", "--workspace", ws, "--state", state,
		"--idle-timeout", idle.String())
	cmd := exec.Command(p.cfg.Binary, args...)
	cmd.Dir = dir
	cmd.Env = append(childEnv(p.cfg.Env), placement.EnvTokenSHA256+"="+placement.HashHex(token))
	if v := placement.LimitsValue(spec.Limits); v != "" {
		cmd.Env = append(cmd.Env, placement.EnvLimits+"="+v)
	}
	cmd.Stderr = logf
	// A group of its own: a terminal's Ctrl-C reaches the runtime, which
	// decides; the sandbox is not killed behind its back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("starting sandboxd: %w", err)
	}

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("starting sandboxd: provider closed: %w", contracts.ErrUnavailable)
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		if scratch != "" {
			os.RemoveAll(scratch)
		}
		return nil, nil, nil, fmt.Errorf("starting sandboxd %s: %w", p.cfg.Binary, err)
	}
	ch := &child{pid: cmd.Process.Pid, session: sessionID, dir: dir, proc: cmd.Process, done: make(chan struct{}), scratch: scratch}
	p.children[ch.pid] = ch
	p.mu.Unlock()
	// Not yet reaped, so the pid is still this child's: the pid file names
	// it for a later process's StopAll or Reap should this one be killed.
	if err := writePidFile(dir, ch.pid); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		p.log.Warn("recording sandboxd pid", "session_id", sessionID, "pid", ch.pid, "error", err)
	}

	lines := make(chan string, 1)
	go p.reap(ch, cmd, stdout, lines)

	timer := time.NewTimer(p.cfg.StartTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-lines:
	case <-timer.C:
		p.kill(ch)
		return nil, nil, nil, fmt.Errorf("sandboxd (pid %d) printed no listening line within %s (see %s): %w", ch.pid, p.cfg.StartTimeout, logPath, contracts.ErrTimeout)
	case <-ctx.Done():
		p.kill(ch)
		return nil, nil, nil, ctx.Err()
	}
	endpoint, err := parseListening(line)
	if err != nil {
		p.kill(ch)
		return nil, nil, nil, fmt.Errorf("sandboxd (pid %d) did not start (see %s): %w", ch.pid, logPath, err)
	}
	rec := &contracts.SandboxRecord{
		Kind: Kind, ID: "pid:" + strconv.Itoa(ch.pid), Endpoint: endpoint, TokenRef: ref,
		Fingerprint: fp, StartedAt: time.Now().UTC(),
	}
	c, err := p.connect(ctx, sessionID, rec)
	if err != nil {
		p.kill(ch)
		return nil, nil, nil, fmt.Errorf("sandboxd (pid %d) at %s: %w", ch.pid, endpoint, err)
	}
	return ch, c, rec, nil
}

// reap reads the listening line (sending "" if stdout closes first), drains
// the rest of stdout, waits for the process and forgets it.
func (p *Provider) reap(ch *child, cmd *exec.Cmd, stdout io.Reader, lines chan<- string) {
	r := bufio.NewReader(stdout)
	line, _ := r.ReadString('\n')
	lines <- line
	io.Copy(io.Discard, r)
	ch.err = cmd.Wait()
	os.Remove(pidPath(ch.dir, ch.pid))
	if ch.scratch != "" {
		os.RemoveAll(ch.scratch)
	}
	p.mu.Lock()
	if p.children[ch.pid] == ch {
		delete(p.children, ch.pid)
	}
	p.mu.Unlock()
	close(ch.done)
	p.log.Info("sandboxd exited", "session_id", ch.session, "pid", ch.pid, "status", fmt.Sprint(ch.err))
}

// parseListening returns the endpoint named by sandboxd's listening line.
func parseListening(line string) (string, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), listenPrefix)
	if !ok {
		return "", fmt.Errorf("unexpected first line %q (want %q…): %w", strings.TrimSpace(line), listenPrefix, contracts.ErrUnavailable)
	}
	u, err := url.Parse(rest)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("listening line names %q, not an http URL: %w", rest, contracts.ErrUnavailable)
	}
	return rest, nil
}

// stop sends SIGTERM, waits StopGrace for the exit, then SIGKILLs.
func (p *Provider) stop(ch *child) {
	if ch == nil {
		return
	}
	select {
	case <-ch.done:
		return
	default:
	}
	ch.proc.Signal(syscall.SIGTERM)
	t := time.NewTimer(p.cfg.StopGrace)
	defer t.Stop()
	select {
	case <-ch.done:
	case <-t.C:
		p.log.Warn("sandboxd ignored SIGTERM, killing it", "session_id", ch.session, "pid", ch.pid)
		p.kill(ch)
	}
}

// kill SIGKILLs the child and waits until it is reaped.
func (p *Provider) kill(ch *child) {
	ch.proc.Kill()
	<-ch.done
}

// childEnv is the base environment of sandboxd: the configured one without
// the runtime's secrets and without SANDBOXD_* (the provider sets those).
func childEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range local.Scrub(env) {
		if !strings.HasPrefix(strings.ToUpper(kv), "SANDBOXD_") {
			out = append(out, kv)
		}
	}
	return out
}
