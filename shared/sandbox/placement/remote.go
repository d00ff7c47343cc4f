package placement

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Remote is a sandbox reached over the network (a remote.Client):
// the SandboxAPI plus an unauthenticated liveness check.
type Remote interface {
	contracts.SandboxAPI
	Health(ctx context.Context) error
}

// Probe checks that r answers and accepts its token: Health, then an
// authenticated Stat of the workspace root. The second call matters because
// an address can be reused — a loopback port or a private IP recorded for a
// dead sandbox may now belong to another session's sandboxd, which answers
// Health but refuses this token (ErrPermission). Every failure wraps
// contracts.ErrUnavailable.
func Probe(ctx context.Context, r Remote) error {
	if err := r.Health(ctx); err != nil {
		if errors.Is(err, contracts.ErrUnavailable) {
			return fmt.Errorf("probing sandbox: %w", err)
		}
		return fmt.Errorf("probing sandbox: %w: %w", contracts.ErrUnavailable, err)
	}
	if _, err := r.Stat(ctx, "."); err != nil {
		return fmt.Errorf("probing sandbox with its token: %w: %w", contracts.ErrUnavailable, err)
	}
	return nil
}

// CheckHostSpec is the check of a sandbox on this host (kinds local and
// process): network "internet" is refused (a host command's network is
// the host's; nothing grants or withholds it), and workspace "ephemeral"
// unless the kind supports it.
func CheckHostSpec(kind string, spec contracts.SandboxSpec, ephemeral bool) error {
	if spec.Network == contracts.NetworkInternet {
		return fmt.Errorf("sandbox.network %q: a %s sandbox runs on the host's network and cannot grant or withhold it; use kind fargate on a deployment with network=public: %w", spec.Network, kind, contracts.ErrInvalid)
	}
	if spec.Workspace == contracts.WorkspaceEphemeral && !ephemeral {
		return fmt.Errorf("sandbox.workspace %q: a %s sandbox's workspace is a directory that persists; kind process honours ephemeral: %w", spec.Workspace, kind, contracts.ErrInvalid)
	}
	return nil
}
