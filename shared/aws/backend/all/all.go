package all

import (
	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/mcptools"
	"github.com/cairnrun/cairn/shared/aws/backend/models"
	"github.com/cairnrun/cairn/shared/aws/backend/sandboxes"
	"github.com/cairnrun/cairn/shared/aws/backend/scripts"
	"github.com/cairnrun/cairn/shared/console"
)

// Serves is every constructor: model providers, Fargate sandboxes, the
// isolate.
var Serves = backend.Serves{Models: models.FromEnv, Sandboxes: sandboxes.Fargate, Evaluator: scripts.Evaluator, MCP: mcptools.Connector, Console: console.Mount}
