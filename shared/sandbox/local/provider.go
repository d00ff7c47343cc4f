package local

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/cairnrun/cairn/shared/contracts"
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
	if err := checkSessionID(sessionID); err != nil {
		return nil, err
	}
	opts := p.opts
	opts.StateDir = filepath.Join(p.baseDir, stateDir, sessionID)
	l, err := New(filepath.Join(p.baseDir, sessionID), opts)
	if err != nil {
		return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
	}
	return l, nil
}

// Release is a no-op: the workspace files are kept for the next Acquire.
func (p *Provider) Release(ctx context.Context, sessionID string) error {
	return checkSessionID(sessionID)
}

// checkSessionID accepts 1–128 characters of [A-Za-z0-9._-] not starting
// with a dot (so never ".", ".." or a hidden name).
func checkSessionID(id string) error {
	bad := id == "" || len(id) > 128 || id[0] == '.'
	for i := 0; i < len(id) && !bad; i++ {
		c := id[i]
		bad = !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if bad {
		return fmt.Errorf("session id %q is not a safe path segment: %w", id, contracts.ErrInvalid)
	}
	return nil
}
