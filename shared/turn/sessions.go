package turn

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// CreateSession stores a new session for owner with spec (validated by
// the caller: policy, tools, model).
func (e *Engine) CreateSession(ctx context.Context, owner string, spec contracts.SessionSpec) (contracts.Session, error) {
	now := e.now()
	sess, err := e.Journal.CreateSession(ctx, contracts.Session{ID: e.IDs.New("ses"), Owner: owner, Spec: spec, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return sess, fmt.Errorf("creating session: %w", err)
	}
	return sess, nil
}

// CheckSandbox reports whether a sandbox spec can be served here: the
// provider's own Check when it has one, else only the local kind.
func (e *Engine) CheckSandbox(spec contracts.SandboxSpec) error {
	if c, ok := e.Sandboxes.(contracts.SandboxChecker); ok {
		return c.Check(spec)
	}
	if spec.Kind != "" && spec.Kind != "local" {
		return fmt.Errorf("sandbox kind %q is not served by this deployment (it serves \"local\"): %w", spec.Kind, contracts.ErrInvalid)
	}
	return nil
}

// CheckModel reports whether a model string resolves here.
func (e *Engine) CheckModel(model string) error {
	c, name, err := e.Models(model)
	if err != nil {
		return err
	}
	if v, ok := c.(contracts.ModelChecker); ok {
		return v.CheckModel(name)
	}
	return nil
}
