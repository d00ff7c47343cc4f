package turn

import (
	"context"

	"github.com/cairnrun/cairn/shared/contracts"
)

// ModelDim exposes modelDim to the black-box tests.
func (e *Engine) ModelDim(specModel string) string { return e.modelDim(specModel) }

// Path exposes path (the cached transcript path) to the black-box tests.
func (e *Engine) Path(ctx context.Context, sessionID, leaf string) ([]contracts.Node, error) {
	return e.path(ctx, sessionID, leaf)
}
