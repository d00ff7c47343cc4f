package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairnrun/cairn/shared/api"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/secrets"
)

// Serves names the heavy parts a process serves beyond the stores and
// queues. Each field is a constructor from a sub-package of backend, so a
// function's main links the SDKs of what it names and nothing else
// (docs/deps_test.go checks it per function):
//
//	model     Serves{Models: models.FromEnv}            the providers' SDKs
//	tools     Serves{Sandboxes: sandboxes.Fargate,      ECS (and EC2 on the public network),
//	                 MCP: mcptools.Connector}           the MCP SDK
//	workflow  Serves{Evaluator: scripts.Evaluator}      the isolate invoker (Lambda)
//	api       Serves{MCP: mcptools.Connector,           the MCP SDK (pinning a session's MCP tools,
//	                 MCPServer: mcptools.Server,        and serving /v1/mcp), the console's
//	                 Console: console.Mount}            templates and assets
//	commit, repair: Serves{}
//	cairn dev --backend aws, tests: all.Serves           everything
//
// A nil field still lets sessions be checked as the serving function
// checks them: model strings through keys.Checks (a missing key is named
// at session creation by the api function as before), Fargate sandbox
// specs through the same network rules; what is never done in the
// process (a model call, RunTask, an evaluation) is refused if asked.
type Serves struct {
	Models    ModelsFunc
	Sandboxes SandboxesFunc
	Evaluator EvaluatorFunc
	MCP       MCPFunc
	// MCPServer serves the API's /v1/mcp (mcptools.Server): the api
	// function only.
	MCPServer api.MCPHandler
	// Console serves the web console at /console/ (console.Mount): the
	// api function only.
	Console api.ConsoleFunc
}

// MCPFunc builds the connector to sessions' MCP servers
// (mcptools.Connector): the api function pins a new session's MCP tools,
// the tools function calls them; without it a spec naming an MCP server is
// refused.
type MCPFunc func(res secrets.Resolver) contracts.MCPConnector

// ModelsFunc builds the model clients (models.FromEnv).
type ModelsFunc func(getenv func(string) string, res secrets.Resolver, awsCfg aws.Config) (map[string]contracts.ModelClient, error)

// SandboxesFunc builds the Fargate sandbox provider (sandboxes.Fargate):
// called only when c.Fargate is set.
type SandboxesFunc func(ctx context.Context, c Config, awsCfg aws.Config, sessions placement.Sessions, blobs contracts.BlobStore) (contracts.SandboxProvider, error)

// EvaluatorFunc builds where scripts are evaluated (scripts.Evaluator):
// called only with the workflow queue and an isolate (function or
// command) configured.
type EvaluatorFunc func(c Config, awsCfg aws.Config) (contracts.Evaluator, error)

// Names of the sandbox kind and networks, as shared/sandbox/fargate spells
// them (a test checks they agree; this package does not import it, which
// would link ECS).
const (
	kindFargate    = "fargate"
	networkPrivate = "private"
	networkPublic  = "public"
)

// fargateChecks is the Fargate sandbox provider of a function that never
// places a sandbox (only the tools function does): Check is
// fargate.Provider.Check's, the rest refuses.
type fargateChecks struct{ f *Fargate }

var _ contracts.SandboxChecker = fargateChecks{}

// Check refuses a spec network this deployment cannot give, as
// fargate.Provider.Check does. It calls nothing.
func (p fargateChecks) Check(spec contracts.SandboxSpec) error {
	return placement.CheckFargateNetwork(spec, string(p.f.Network), p.f.Network == networkPublic, len(p.f.InternetSecurityGroups))
}

var errNoSandboxes = fmt.Errorf("fargate sandboxes are placed by the tools function, not in this process: %w", contracts.ErrUnavailable)

func (fargateChecks) Acquire(context.Context, string, contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	return nil, errNoSandboxes
}

// Release has nothing to release: this process holds no sandbox.
func (fargateChecks) Release(context.Context, string) error { return nil }

// localChecks is the "local" sandbox provider (a deployment without
// Fargate settings, as on a local endpoint) of a function that never runs
// tools: it checks specs as local.Provider does and places nothing, so
// only the function serving sandboxes links the local sandbox (and the
// MCP SDK its stdio servers use).
type localChecks struct{}

var _ contracts.SandboxChecker = localChecks{}

func (localChecks) Check(spec contracts.SandboxSpec) error {
	return placement.CheckHostSpec("local", spec, false)
}

func (localChecks) Acquire(context.Context, string, contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	return nil, errNoLocalSandboxes
}

func (localChecks) Release(context.Context, string) error { return nil }

var errNoLocalSandboxes = fmt.Errorf("sandboxes are placed by the tools function, not in this process: %w", contracts.ErrUnavailable)

// notEvaluated is the Evaluator of a function that serves workflows (starts
// runs, records node results, wakes runs) but never evaluates a script:
// only the workflow function does.
type notEvaluated struct{}

func (notEvaluated) Evaluate(context.Context, contracts.EvalRequest) (contracts.EvalResponse, error) {
	return contracts.EvalResponse{}, errors.New("workflow scripts are evaluated by the workflow function, not in this process")
}
