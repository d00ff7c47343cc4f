package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// stateDir under the base directory holds each session's call ledger. A
// session id never starts with a dot, so it never collides with one.
const stateDir = ".state"

// Provider places every session's sandbox in a directory of its own under a
// base directory (its call ledger under .state/<session>): the "local"
// sandbox kind.
//
// Run as root, its commands run as another user (opts.Credential; by
// default DefaultRunAs, nobody): the sandboxes it returns are Owned, each
// session's workspace is given to that user at its first Acquire (by this
// provider) and made reachable by it (the directories above get o+x,
// never o+r), and .state stays this process's, mode 0700: a command cannot
// list, read or write a ledger record.
type Provider struct {
	baseDir string
	opts    Options

	mu     sync.Mutex
	given  map[string]bool     // sessions whose workspace this provider gave to opts.Credential
	mcp    map[string]*mcpHost // sessions' stdio MCP servers: every Acquire's sandbox shares them
	placed map[string]placed   // sessions' sandboxes, for the next Acquire (reuse)
}

// placed is a sandbox Acquire returned, and what it holds.
type placed struct {
	api    contracts.SandboxAPI
	dir    os.FileInfo // the directory it holds open (its os.Root)
	root   string      // the path it resolved the workspace to, where its commands run
	host   *mcpHost    // its stdio MCP servers, the session's while they are not stopped
	limits contracts.SandboxLimits
}

// maxPlaced bounds the sandboxes kept for reuse (each holds its workspace
// directory open).
const maxPlaced = 1024

var _ contracts.SandboxProvider = (*Provider)(nil)

// NewProvider returns a provider keeping workspaces under baseDir/<sessionID>.
// Without opts.Credential, its commands run as DefaultRunAs when this
// process runs as root, as this process's user otherwise (NewProviderAs
// chooses).
func NewProvider(baseDir string, opts Options) *Provider {
	if opts.Credential == nil {
		opts.Credential, _ = RunAs("", os.Geteuid()) // the default never fails
	}
	return &Provider{baseDir: baseDir, opts: opts, given: map[string]bool{}}
}

// NewProviderAs is NewProvider with the user of commands given as a run-as
// setting (RunAs: "uid:gid", "self", or "" for the default), which replaces
// opts.Credential; a malformed setting, or another user without root, is
// ErrInvalid.
func NewProviderAs(baseDir string, opts Options, runAs string) (*Provider, error) {
	cred, err := RunAs(runAs, os.Geteuid())
	if err != nil {
		return nil, err
	}
	opts.Credential = cred
	return &Provider{baseDir: baseDir, opts: opts, given: map[string]bool{}}, nil
}

// Acquire returns the session's sandbox, creating its directory if needed.
// It is idempotent: the same session gets the same workspace. Spec kinds
// other than "" and "local", and session ids that are not a safe path
// segment, are ErrInvalid.
func (p *Provider) Acquire(ctx context.Context, sessionID string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if spec.Kind != "" && spec.Kind != "local" {
		return nil, fmt.Errorf("acquiring sandbox for session %s: unsupported kind %q (this provider serves \"local\"): %w", sessionID, spec.Kind, contracts.ErrInvalid)
	}
	if err := placement.CheckSessionID(sessionID); err != nil {
		return nil, err
	}
	ws := filepath.Join(p.baseDir, sessionID)
	if api, ok := p.reuse(sessionID, ws, spec.Limits); ok {
		return api, nil
	}
	opts := p.opts
	opts.StateDir = filepath.Join(p.baseDir, stateDir, sessionID)
	opts.Limits = spec.Limits
	if opts.Credential != nil {
		// Created here, not by New, so that it is not listable by others
		// (an existing directory keeps its mode).
		if err := os.MkdirAll(p.baseDir, 0o711); err != nil {
			return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
		}
	}
	l, err := New(ws, opts)
	if err != nil {
		return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
	}
	p.mu.Lock()
	if p.mcp == nil {
		p.mcp = map[string]*mcpHost{}
	}
	if h := p.mcp[sessionID]; h != nil {
		l.mcp = h
	} else {
		p.mcp[sessionID] = l.mcp
	}
	p.mu.Unlock()
	if opts.Credential == nil {
		p.keep(sessionID, l, spec.Limits, l)
		return l, nil
	}
	o := Own(l)
	if err := p.give(sessionID, o); err != nil {
		return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
	}
	p.keep(sessionID, l, spec.Limits, o)
	return o, nil
}

// reuse returns the sandbox an earlier Acquire placed for the session
// with the same limits while the workspace path, and the path it resolved
// it to (where its commands run), both still name the directory it holds
// (os.SameFile: not removed, replaced, or moved away under a symlink
// since; the held directory keeps its inode from being reused) and its MCP
// servers were not stopped (Release) — two stats instead of creating,
// resolving and opening the workspace again. The sandbox is the same
// value, shared by the phases that use it (its calls, cancels and ledger
// one set).
func (p *Provider) reuse(sessionID, ws string, limits contracts.SandboxLimits) (contracts.SandboxAPI, bool) {
	p.mu.Lock()
	c, ok := p.placed[sessionID]
	current := ok && p.mcp[sessionID] == c.host
	p.mu.Unlock()
	if !current || c.limits != limits {
		return nil, false
	}
	for _, path := range []string{ws, c.root} {
		if fi, err := os.Stat(path); err != nil || !os.SameFile(fi, c.dir) {
			return nil, false
		}
	}
	return c.api, true
}

// keep notes api, l as the session's Acquire returns it, for reuse: with
// the directory l holds (not what its path names now, which may have been
// replaced since l opened it), and only while l's MCP servers are the
// session's (a Release since stopped them).
func (p *Provider) keep(sessionID string, l *Sandbox, limits contracts.SandboxLimits, api contracts.SandboxAPI) {
	fi, err := l.ws.Stat(".")
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mcp[sessionID] != l.mcp {
		return
	}
	if p.placed == nil {
		p.placed = map[string]placed{}
	}
	if _, ok := p.placed[sessionID]; !ok && len(p.placed) >= maxPlaced {
		for victim := range p.placed { // any one: a later Acquire of it places it again
			delete(p.placed, victim)
			break
		}
	}
	p.placed[sessionID] = placed{api: api, dir: fi, root: l.root, host: l.mcp, limits: limits}
}

// give prepares a session's workspace for commands run as another user,
// once per session and provider: the ledger directory stays this
// process's alone (0700), the directories above the workspace become
// searchable (o+x) by others, the workspace tree (files written before,
// as this process's user, included) becomes the commands' user's, and
// that user must then reach it. Afterwards the commands' own files are
// theirs already and Owned gives them what the tools create.
func (p *Provider) give(sessionID string, o Owned) error {
	p.mu.Lock()
	done := p.given[sessionID]
	p.mu.Unlock()
	if done {
		return nil
	}
	c := p.opts.Credential
	state := filepath.Join(p.baseDir, stateDir)
	if err := os.MkdirAll(state, 0o700); err != nil { // the ledgers below it are made on first use
		return fmt.Errorf("keeping the call ledger from commands: %w", err)
	}
	if err := os.Chmod(state, 0o700); err != nil {
		return fmt.Errorf("keeping the call ledger from commands: %w", err)
	}
	if err := Searchable(o.Root()); err != nil {
		return err
	}
	if err := o.ChownTree(); err != nil {
		return fmt.Errorf("the workspace must belong to the commands' user: %w", err)
	}
	if err := Reachable(o.Root(), c.Uid, c.Gid); err != nil {
		return err
	}
	p.mu.Lock()
	p.given[sessionID] = true
	p.mu.Unlock()
	return nil
}

// Check refuses the options a directory in this process cannot honour: a
// network of its own ("internet" is no more than the host's network, which
// commands share anyway, so only the default "none" is accepted — and not
// enforced: docs/ARCHITECTURE.md "Tools and sandboxes") and an ephemeral
// workspace (the directory persists; kind "process" has one).
func (p *Provider) Check(spec contracts.SandboxSpec) error {
	return checkHostSpec("local", spec, false)
}

// checkHostSpec is the Check of a sandbox on this host: network "internet"
// is refused (a host command's network is the host's; nothing grants or
// withholds it), and workspace "ephemeral" unless the kind supports it.
func checkHostSpec(kind string, spec contracts.SandboxSpec, ephemeral bool) error {
	return placement.CheckHostSpec(kind, spec, ephemeral)
}

// CheckHostSpec is checkHostSpec for the process kind (shared/sandbox/proc),
// which honours an ephemeral workspace.
func CheckHostSpec(kind string, spec contracts.SandboxSpec) error {
	return checkHostSpec(kind, spec, true)
}

// Release stops the session's stdio MCP servers; the workspace files are
// kept for the next Acquire.
func (p *Provider) Release(ctx context.Context, sessionID string) error {
	if err := placement.CheckSessionID(sessionID); err != nil {
		return err
	}
	p.mu.Lock()
	h := p.mcp[sessionID]
	delete(p.mcp, sessionID)
	delete(p.placed, sessionID) // its sandbox shares the servers stopped here
	p.mu.Unlock()
	if h != nil {
		h.close(true)
	}
	return nil
}
