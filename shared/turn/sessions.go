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

// CheckModel reports whether a model string resolves here.
func (e *Engine) CheckModel(model string) error {
	c, name, err := e.Models(model)
	if err != nil {
		return err
	}
	if v, ok := c.(interface{ CheckModel(string) error }); ok {
		return v.CheckModel(name)
	}
	return nil
}
