package local

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// stateDir under the base directory holds each session's call ledger. A
// session id never starts with a dot, so it never collides with one.
const stateDir = ".state"

// Provider places every session's sandbox in a directory of its own under a
// base directory (its call ledger under .state/<session>): the "local"
// sandbox kind.
type Provider struct {
	baseDir string
	opts    Options
}

var _ contracts.SandboxProvider = (*Provider)(nil)

// NewProvider returns a provider keeping workspaces under baseDir/<sessionID>.
func NewProvider(baseDir string, opts Options) *Provider {
	return &Provider{baseDir: baseDir, opts: opts}
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
	opts := p.opts
	opts.StateDir = filepath.Join(p.baseDir, stateDir, sessionID)
	opts.Limits = spec.Limits
	l, err := New(filepath.Join(p.baseDir, sessionID), opts)
	if err != nil {
		return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
	}
	return l, nil
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
	if spec.Network == contracts.NetworkInternet {
		return fmt.Errorf("sandbox.network %q: a %s sandbox runs on the host's network and cannot grant or withhold it; use kind fargate on a deployment with network=public: %w", spec.Network, kind, contracts.ErrInvalid)
	}
	if spec.Workspace == contracts.WorkspaceEphemeral && !ephemeral {
		return fmt.Errorf("sandbox.workspace %q: a %s sandbox's workspace is a directory that persists; kind process honours ephemeral: %w", spec.Workspace, kind, contracts.ErrInvalid)
	}
	return nil
}

// CheckHostSpec is checkHostSpec for the process kind (shared/sandbox/proc),
// which honours an ephemeral workspace.
func CheckHostSpec(kind string, spec contracts.SandboxSpec) error { return checkHostSpec(kind, spec, true) }

// Release is a no-op: the workspace files are kept for the next Acquire.
func (p *Provider) Release(ctx context.Context, sessionID string) error {
	return placement.CheckSessionID(sessionID)
}
