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
