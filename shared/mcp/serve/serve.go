package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Waits of a tool: how long it waits for a turn or run to end before it
// returns a handle.
const (
	// DefaultWait is the wait when the client names none (and MaxWait
	// allows it).
	DefaultWait = 60 * time.Second
	// PollWait is the longest one events long-poll is asked to wait (the
	// API's own bound is 25 s).
	PollWait = 20 * time.Second
	// RunPoll is how often a workflow run's status is read while waiting
	// (runs have no event long-poll).
	RunPoll = time.Second
)

// Config is what the server's tools need.
type Config struct {
	// API performs one request of cairn's HTTP API v1: the request's URL is
	// a path (/v1/…) and carries no credentials; API adds the caller's
	// and sends it (over HTTP, or to the handler in-process).
	API func(*http.Request) (*http.Response, error)
	// MaxWait bounds the wait a client may ask for (wait_seconds); 0 =
	// DefaultWait. /v1/mcp behind API Gateway must answer within 29 s.
	MaxWait time.Duration
	// Version is reported in the server's implementation info.
	Version string
}

type tools struct{ cfg Config }

// New returns an MCP server with cairn's tools over cfg.API.
func New(cfg Config) *sdk.Server {
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultWait
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	t := &tools{cfg: cfg}
	s := sdk.NewServer(&sdk.Implementation{Name: "cairn", Title: "cairn durable agent runtime", Version: cfg.Version},
		&sdk.ServerOptions{Instructions: instructions})
	waitHint := fmt.Sprintf(" Waits up to wait_seconds (default %d, at most %d) and then returns a handle to pass to get_result; a turn waiting for an approval returns at once with the approvals to decide.",
		int(min(DefaultWait, cfg.MaxWait)/time.Second), int(cfg.MaxWait/time.Second))
	sdk.AddTool(s, schemas[RunAgentIn, Turn](&sdk.Tool{Name: "run_agent", Title: "Run a durable agent turn",
		Description: "Start a durable agent turn on cairn: a new session (model, tools) or a next turn of session_id. The turn survives this client: it keeps running if the call ends." + waitHint}),
		t.runAgent)
	sdk.AddTool(s, schemas[TurnIn, Turn](&sdk.Tool{Name: "get_result", Title: "Get a turn's result",
		Description: "The state and result of a turn started by run_agent (its session_id and submission_id), waiting for it to end." + waitHint,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}),
		t.getResult)
	sdk.AddTool(s, schemas[ApproveIn, Turn](&sdk.Tool{Name: "approve", Title: "Decide an approval",
		Description: "Allow or deny a tool call a parked turn waits on (an approval id from run_agent or get_result), then wait for the turn as get_result does." + waitHint}),
		t.approve)
	sdk.AddTool(s, schemas[CancelIn, Turn](&sdk.Tool{Name: "cancel", Title: "Cancel a turn",
		Description: "Cancel a running or parked turn; it ends CANCELLED (idempotent).",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true}}),
		t.cancelTurn)
	sdk.AddTool(s, schemas[RunWorkflowIn, Run](&sdk.Tool{Name: "run_workflow", Title: "Run a workflow",
		Description: "Start a run of a stored workflow (workflow_id) with input, or look at one (run_id), waiting for it to end." + waitHint}),
		t.runWorkflow)
	return s
}

const instructions = `cairn runs agent turns durably: run_agent starts one and waits for it; if it is still running when the wait ends you get its session_id and submission_id, and get_result picks it up later, from any client. A turn that needs a human's approval for a tool call comes back with approvals: decide each with approve. Progress notifications report every step while a tool waits.`

func ptr[T any](v T) *T { return &v }

// Value is any JSON value (an input, a result). Its schema is {}, not the
// boolean schema true an interface type infers to, which some clients
// (the TypeScript SDK) refuse.
type Value any

var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[Value](): {Description: "any JSON value"},
}}

// schemas sets t's input and output schemas as In and Out infer them
// (with Value as {}).
func schemas[In, Out any](t *sdk.Tool) *sdk.Tool {
	in, err := jsonschema.For[In](schemaOptions)
	if err != nil {
		panic(err) // the types above: a programming error, caught by every test
	}
	out, err := jsonschema.For[Out](schemaOptions)
	if err != nil {
		panic(err)
	}
	t.InputSchema, t.OutputSchema = in, out
	return t
}

// TurnIn names a turn and how long to wait for it.
type TurnIn struct {
	SessionID    string `json:"session_id" jsonschema:"the turn's session"`
	SubmissionID string `json:"submission_id" jsonschema:"the turn (its submission id)"`
	WaitSeconds  int    `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the turn to end (0 = the default)"`
}

// RunAgentIn starts a turn.
type RunAgentIn struct {
	Prompt         string   `json:"prompt" jsonschema:"the task, as the user's message to the agent"`
	SessionID      string   `json:"session_id,omitempty" jsonschema:"continue this session (its next turn); empty = a new session"`
	Model          string   `json:"model,omitempty" jsonschema:"a new session's model, e.g. anthropic:claude-sonnet-4-5 (empty = the server's default)"`
	Tools          []string `json:"tools,omitempty" jsonschema:"a new session's tools, e.g. read_file, bash (empty = the server's default)"`
	IdempotencyKey string   `json:"idempotency_key,omitempty" jsonschema:"the same key gives the same turn when a call is repeated"`
	WaitSeconds    int      `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the turn to end (0 = the default)"`
}

// ApproveIn decides one approval.
type ApproveIn struct {
	SessionID    string `json:"session_id" jsonschema:"the turn's session"`
	SubmissionID string `json:"submission_id,omitempty" jsonschema:"the turn, to wait for after deciding (empty = do not wait)"`
	ApprovalID   string `json:"approval_id" jsonschema:"the approval to decide"`
	Decision     string `json:"decision" jsonschema:"allow or deny"`
	Reason       string `json:"reason,omitempty" jsonschema:"why, recorded with the decision"`
	WaitSeconds  int    `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the turn afterwards (0 = the default)"`
}

// CancelIn cancels one turn.
type CancelIn struct {
	SessionID    string `json:"session_id" jsonschema:"the turn's session"`
	SubmissionID string `json:"submission_id" jsonschema:"the turn"`
	Reason       string `json:"reason,omitempty" jsonschema:"why, recorded with the cancel"`
}

// RunWorkflowIn starts or looks at a workflow run.
type RunWorkflowIn struct {
	WorkflowID     string `json:"workflow_id" jsonschema:"the stored workflow"`
	RunID          string `json:"run_id,omitempty" jsonschema:"look at this run instead of starting one"`
	Input          Value  `json:"input,omitempty" jsonschema:"the run's input (any JSON value)"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the same key gives the same run when a call is repeated"`
	WaitSeconds    int    `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the run to end (0 = the default)"`
}

// Approval is a pending approval of a parked turn.
type Approval struct {
	ID    string `json:"id"`
	Tool  string `json:"tool"`
	Input Value  `json:"input,omitempty"` // the call's input, as the tool got it
}

// Turn is a turn's state as the tools return it: Done when it ended
// (Phase COMMITTED, FAILED or CANCELLED), Approvals while it is parked.
type Turn struct {
	SessionID    string          `json:"session_id"`
	SubmissionID string          `json:"submission_id"`
	Phase        string          `json:"phase"`
	Step         int             `json:"step"`
	Done         bool            `json:"done"`
	Result       string          `json:"result,omitempty"`
	Error        string          `json:"error,omitempty"`
	Approvals    []Approval      `json:"approvals,omitempty"`
	Usage        contracts.Usage `json:"usage"`
}

// Run is a workflow run's state.
type Run struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	Status     string `json:"status"`
	Done       bool   `json:"done"`
	Result     Value  `json:"result,omitempty"` // the run's result
	Error      string `json:"error,omitempty"`
}

// wait is the wait a client asked for, bounded.
func (s *tools) wait(seconds int) (time.Duration, error) {
	if seconds < 0 {
		return 0, fmt.Errorf("wait_seconds %d: want 0 or more", seconds)
	}
	if seconds == 0 {
		return min(DefaultWait, s.cfg.MaxWait), nil
	}
	if seconds > int(s.cfg.MaxWait/time.Second) {
		return 0, fmt.Errorf("wait_seconds %d: at most %d here (then call get_result)", seconds, int(s.cfg.MaxWait/time.Second))
	}
	return time.Duration(seconds) * time.Second, nil
}

func required(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if strings.TrimSpace(fields[i+1]) == "" {
			return fmt.Errorf("%s is required", fields[i])
		}
	}
	return nil
}

// ids refuses ids that are path steps ("." and ".."): they would name
// another route, not a record.
func ids(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if v := fields[i+1]; v == "." || v == ".." {
			return fmt.Errorf("%s %q is not an id", fields[i], v)
		}
	}
	return nil
}

// MaxPromptBytes is the API's bound on a prompt, checked before a new
// session is made for it (a refused prompt leaves no empty session).
const MaxPromptBytes = 256 << 10

func (s *tools) runAgent(ctx context.Context, req *sdk.CallToolRequest, in RunAgentIn) (*sdk.CallToolResult, Turn, error) {
	if err := required("prompt", in.Prompt); err != nil {
		return nil, Turn{}, err
	}
	if len(in.Prompt) > MaxPromptBytes {
		return nil, Turn{}, fmt.Errorf("prompt is %d bytes, limit %d", len(in.Prompt), MaxPromptBytes)
	}
	if err := ids("session_id", in.SessionID); err != nil {
		return nil, Turn{}, err
	}
	wait, err := s.wait(in.WaitSeconds)
	if err != nil {
		return nil, Turn{}, err
	}
	sessionID := in.SessionID
	if sessionID == "" {
		if in.IdempotencyKey != "" {
			// A repeated call must find its turn, and a new session each
			// time could not: the key names a session-less turn nowhere.
			return nil, Turn{}, errors.New("idempotency_key needs session_id: create the session with a first run_agent, then repeat turns in it with a key")
		}
		spec := contracts.SessionSpec{Model: in.Model}
		for _, name := range in.Tools {
			spec.Tools = append(spec.Tools, contracts.ToolConfig{Name: name})
		}
		sess, err := s.createSession(ctx, spec)
		if err != nil {
			return nil, Turn{}, err
		}
		sessionID = sess.ID
	} else if in.Model != "" || len(in.Tools) > 0 {
		return nil, Turn{}, errors.New("model and tools are a new session's: leave them out with session_id")
	}
	sub, err := s.submit(ctx, sessionID, in.Prompt, in.IdempotencyKey)
	if err != nil {
		return nil, Turn{}, err
	}
	return s.follow(ctx, req, sessionID, sub.ID, wait)
}

func (s *tools) getResult(ctx context.Context, req *sdk.CallToolRequest, in TurnIn) (*sdk.CallToolResult, Turn, error) {
	if err := required("session_id", in.SessionID, "submission_id", in.SubmissionID); err != nil {
		return nil, Turn{}, err
	}
	if err := ids("session_id", in.SessionID, "submission_id", in.SubmissionID); err != nil {
		return nil, Turn{}, err
	}
	wait, err := s.wait(in.WaitSeconds)
	if err != nil {
		return nil, Turn{}, err
	}
	return s.follow(ctx, req, in.SessionID, in.SubmissionID, wait)
}

func (s *tools) approve(ctx context.Context, req *sdk.CallToolRequest, in ApproveIn) (*sdk.CallToolResult, Turn, error) {
	if err := required("session_id", in.SessionID, "approval_id", in.ApprovalID, "decision", in.Decision); err != nil {
		return nil, Turn{}, err
	}
	if err := ids("session_id", in.SessionID, "approval_id", in.ApprovalID, "submission_id", in.SubmissionID); err != nil {
		return nil, Turn{}, err
	}
	d := contracts.Decision(in.Decision)
	if d != contracts.Allow && d != contracts.Deny {
		return nil, Turn{}, fmt.Errorf("decision %.32q: want allow or deny", in.Decision)
	}
	wait, err := s.wait(in.WaitSeconds)
	if err != nil {
		return nil, Turn{}, err
	}
	if _, err := s.decide(ctx, in.SessionID, in.ApprovalID, d, in.Reason); err != nil {
		return nil, Turn{}, err
	}
	if in.SubmissionID == "" {
		return textResult(fmt.Sprintf("approval %s: %s", in.ApprovalID, d)), Turn{SessionID: in.SessionID}, nil
	}
	return s.follow(ctx, req, in.SessionID, in.SubmissionID, wait)
}

func (s *tools) cancelTurn(ctx context.Context, req *sdk.CallToolRequest, in CancelIn) (*sdk.CallToolResult, Turn, error) {
	if err := required("session_id", in.SessionID, "submission_id", in.SubmissionID); err != nil {
		return nil, Turn{}, err
	}
	if err := ids("session_id", in.SessionID, "submission_id", in.SubmissionID); err != nil {
		return nil, Turn{}, err
	}
	sub, err := s.cancel(ctx, in.SessionID, in.SubmissionID, in.Reason)
	if err != nil {
		return nil, Turn{}, err
	}
	t := turnOf(sub)
	return textResult(t.summary()), t, nil
}

func (s *tools) runWorkflow(ctx context.Context, req *sdk.CallToolRequest, in RunWorkflowIn) (*sdk.CallToolResult, Run, error) {
	if err := required("workflow_id", in.WorkflowID); err != nil {
		return nil, Run{}, err
	}
	if err := ids("workflow_id", in.WorkflowID, "run_id", in.RunID); err != nil {
		return nil, Run{}, err
	}
	wait, err := s.wait(in.WaitSeconds)
	if err != nil {
		return nil, Run{}, err
	}
	var run contracts.WorkflowRun
	if in.RunID != "" {
		if in.Input != nil || in.IdempotencyKey != "" {
			return nil, Run{}, errors.New("input and idempotency_key start a run: leave them out with run_id")
		}
		run, err = s.run(ctx, in.WorkflowID, in.RunID)
	} else {
		var input json.RawMessage
		if in.Input != nil {
			input, _ = json.Marshal(in.Input) // decoded from JSON: it encodes
		}
		run, err = s.startRun(ctx, in.WorkflowID, input, in.IdempotencyKey)
	}
	if err != nil {
		return nil, Run{}, err
	}
	return s.followRun(ctx, req, run, wait)
}

func textResult(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// MaxBody bounds a /v1/mcp request body, as the API bounds every body.
const MaxBody = 1 << 20

// Handler serves cairn as an MCP server over Streamable HTTP, stateless
// (any process answers any request, and a request's progress
// notifications stream on its own response), its tools calling the API
// through call; it is api.MCPHandler with maxWait bound.
func Handler(call func(*http.Request) (*http.Response, error), maxWait time.Duration) http.Handler {
	srv := New(Config{API: call, MaxWait: maxWait})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless: true,
		// The API's own bound on a body.
		MaxRequestBodyBytes: MaxBody,
		// Every request is authenticated (bearer token, IAM or JWT), so a
		// DNS-rebound page has no credentials to send; behind a reverse
		// proxy the Host is not loopback and must not be refused.
		DisableLocalhostProtection: true,
	})
}
