package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// Kind is the sandbox kind this package serves.
const Kind = "process"

// Defaults applied by New to zero Config fields.
const (
	DefaultIdleTimeout  = 30 * time.Minute
	DefaultStartTimeout = 10 * time.Second
	// DefaultStopGrace outlasts sandboxd's own shutdown (its grace for
	// running calls plus their drain), so a stop lets running calls finish
	// and record their outcome before SIGKILL.
	DefaultStopGrace = server.DefaultShutdownGrace + 10*time.Second
	// probeTimeout bounds checking a recorded sandboxd before reusing it.
	probeTimeout = 5 * time.Second
	// connectTimeout bounds connecting to a sandboxd on loopback.
	connectTimeout = 2 * time.Second
)

// Config configures a Provider. Binary, BaseDir, Sessions and a Tokens key
// are required.
type Config struct {
	// Binary is the path of the sandboxd executable, and Args what comes
	// before its flags: `cairn sandboxd` is Binary=<cairn>, Args=["sandboxd"].
	Binary string
	Args   []string
	// BaseDir holds each session's BaseDir/<session>/{workspace,state} and
	// sandboxd.log (its stderr).
	BaseDir string
	// Sessions is where the sandbox record is kept (the journal).
	Sessions placement.Sessions
	// Tokens derives each sandbox's bearer token from its record.
	Tokens placement.Tokens
	// IdleTimeout is passed to sandboxd: it stops after this long without
	// a request (default DefaultIdleTimeout; negative: never).
	IdleTimeout time.Duration
	// Env is the whole base environment of sandboxd (and so of the
	// sandboxed commands): the caller passes a minimal one, never
	// os.Environ(). It is scrubbed of secrets and SANDBOXD_* all the same.
	Env []string
	// StartTimeout bounds waiting for sandboxd's listening line (default
	// DefaultStartTimeout).
	StartTimeout time.Duration
	// StopGrace is how long a stop waits after SIGTERM before SIGKILL
	// (default DefaultStopGrace).
	StopGrace time.Duration
	// Remote configures the clients Acquire returns. Without an
	// HTTPClient they share one of the provider's (remote.NewHTTPClient).
	Remote remote.Options
	// Log receives lifecycle messages (never a token); nil discards.
	Log *slog.Logger
	// Snapshots keeps the workspaces of specs with workspace "ephemeral"
	// (each sandboxd then gets a fresh directory, removed when it exits,
	// and the workspace is snapshotted and restored as on fargate). Nil:
	// "ephemeral" workspaces are lost with their sandboxd.
	Snapshots *snapshot.Store
}

// Provider is the "process" SandboxProvider. It is safe for concurrent use;
// concurrent Acquires of one session in one Provider start at most one
// sandboxd.
type Provider struct {
	cfg      Config
	log      *slog.Logger
	locks    placement.Locks
	acquirer placement.Acquirer // runs Acquire with reuse and newSandbox

	mu       sync.Mutex
	children map[int]*child // started by this provider and not yet exited
	closed   bool
}

var _ contracts.SandboxProvider = (*Provider)(nil)

// New checks cfg and returns a provider. It starts nothing.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.Binary == "":
		return nil, fmt.Errorf("configuring process sandboxes: no sandboxd binary: %w", contracts.ErrInvalid)
	case cfg.BaseDir == "":
		return nil, fmt.Errorf("configuring process sandboxes: no base directory: %w", contracts.ErrInvalid)
	case cfg.Sessions == nil:
		return nil, fmt.Errorf("configuring process sandboxes: no session store: %w", contracts.ErrInvalid)
	}
	if err := cfg.Tokens.Check(); err != nil {
		return nil, fmt.Errorf("configuring process sandboxes: %w", err)
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.Remote.HTTPClient == nil {
		cfg.Remote.HTTPClient = remote.NewHTTPClient(connectTimeout)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p := &Provider{cfg: cfg, log: log, children: map[int]*child{}}
	p.acquirer = placement.Acquirer{
		Kind: Kind, Sessions: cfg.Sessions, Locks: &p.locks, Log: log,
		IDKey: "sandbox_id", RecordedMsg: "sandbox started",
		CheckSessionID: placement.CheckSessionID, Reuse: p.reuse, Start: p.newSandbox,
		Snapshots: cfg.Snapshots,
		Durable:   func(spec contracts.SandboxSpec) bool { return spec.Workspace == contracts.WorkspaceEphemeral },
	}
	return p, nil
}

// Check refuses network "internet" (a sandboxd on this host shares its
// network); workspace "ephemeral" is served.
func (p *Provider) Check(spec contracts.SandboxSpec) error { return local.CheckHostSpec(Kind, spec) }

// Acquire returns the session's sandbox: the recorded sandboxd when it is a
// "process" one with this spec's fingerprint and answers with its token,
// else a newly started one, recorded on the session. If another process
// records its own sandboxd first, Acquire stops the one it started and
// reconnects to the winner.
func (p *Provider) Acquire(ctx context.Context, sessionID string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	return p.acquirer.Acquire(ctx, sessionID, spec)
}

// reuse returns a client of the recorded sandboxd if it has this spec's
// fingerprint and answers with its token; else nil, after stopping it if
// this provider started it. The caller's context ending is an error.
func (p *Provider) reuse(ctx context.Context, sessionID string, old *contracts.SandboxRecord, fp string) (contracts.SandboxAPI, error) {
	if old.Fingerprint == fp {
		c, err := p.connect(ctx, sessionID, old)
		if err == nil {
			p.log.DebugContext(ctx, "sandbox reconnected", "session_id", sessionID, "sandbox_id", old.ID, "endpoint", old.Endpoint)
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.log.InfoContext(ctx, "recorded sandbox unusable, replacing it", "session_id", sessionID, "sandbox_id", old.ID, "endpoint", old.Endpoint, "error", err)
	}
	p.stopRecorded(sessionID, old)
	return nil, nil
}

// newSandbox starts a sandboxd for Acquire; one whose record is not stored
// is stopped.
func (p *Provider) newSandbox(ctx context.Context, sessionID string, spec contracts.SandboxSpec, fp string) (placement.Started, error) {
	ch, c, rec, err := p.start(ctx, sessionID, spec, fp)
	if err != nil {
		return placement.Started{}, err
	}
	return placement.Started{Sandbox: c, Record: rec, Stop: func(context.Context) { p.stop(ch) }}, nil
}

// connect returns a client of the recorded sandboxd after checking that it
// answers and accepts the token derived from the record.
func (p *Provider) connect(ctx context.Context, sessionID string, rec *contracts.SandboxRecord) (*remote.Client, error) {
	c, err := remote.New(rec.Endpoint, p.cfg.Tokens.Mint(sessionID, rec.TokenRef), p.cfg.Remote)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := placement.Probe(pctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Release stops the session's recorded sandboxd if this provider started it
// and clears the record but for its workspace state (placement.Released);
// the workspace files are kept. A session holding no
// "process" sandbox is left alone.
func (p *Provider) Release(ctx context.Context, sessionID string) error {
	if err := placement.CheckSessionID(sessionID); err != nil {
		return err
	}
	unlock, err := p.locks.Lock(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("releasing sandbox of session %s: %w", sessionID, err)
	}
	defer unlock()
	s, err := p.cfg.Sessions.GetSession(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("releasing sandbox of session %s: %w", sessionID, err)
	}
	if !placement.Running(s.Sandbox) || s.Sandbox.Kind != Kind {
		return nil
	}
	p.stopRecorded(sessionID, s.Sandbox)
	if _, err := placement.Replace(ctx, p.cfg.Sessions, sessionID, s.Sandbox, placement.Released(s.Sandbox)); err != nil {
		if errors.Is(err, contracts.ErrConflict) {
			return nil // a newer sandbox was placed meanwhile: it is not ours to clear
		}
		return fmt.Errorf("releasing sandbox of session %s: %w", sessionID, err)
	}
	p.log.InfoContext(ctx, "sandbox released", "session_id", sessionID, "sandbox_id", s.Sandbox.ID)
	return nil
}

// Close stops every sandboxd this provider started (SIGTERM, then SIGKILL
// after StopGrace) and refuses further starts. Records are left in place:
// the next Acquire finds them dead and starts anew.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closed = true
	all := make([]*child, 0, len(p.children))
	for _, c := range p.children {
		all = append(all, c)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Go(func() { p.stop(c) })
	}
	wg.Wait()
	return nil
}

// stopRecorded stops the recorded sandboxd if this provider started it. A
// pid from elsewhere is never signalled: it may have been reused by an
// unrelated process. Such a sandboxd stops by itself when idle.
func (p *Provider) stopRecorded(sessionID string, rec *contracts.SandboxRecord) {
	pid, ok := parsePID(rec.ID)
	if !ok {
		return
	}
	p.mu.Lock()
	c := p.children[pid]
	p.mu.Unlock()
	if c != nil && c.session == sessionID {
		p.stop(c)
	}
}

func parsePID(id string) (int, bool) {
	s, ok := strings.CutPrefix(id, "pid:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}
