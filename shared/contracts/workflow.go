package contracts

import (
	"context"
	"encoding/json"
	"time"
)

// QueueWorkflow carries workflow wake-ups: Message{Kind: QueueWorkflow,
// SessionID: run id (the FIFO group: one evaluation of a run at a time),
// SubmissionID: run id, Version: the run's version, Nonce: why}.
const QueueWorkflow = "workflow"

// Workflow is a named Starlark script, checked (syntax and names) when it
// is created.
type Workflow struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner,omitempty"`
	Name      string    `json:"name"`
	Script    string    `json:"script"`
	CreatedAt time.Time `json:"created_at"`
}

// RunStatus is a workflow run's state.
type RunStatus string

const (
	RunRunning   RunStatus = "RUNNING"
	RunSucceeded RunStatus = "SUCCEEDED"
	RunFailed    RunStatus = "FAILED"
	RunCancelled RunStatus = "CANCELLED"
)

// Terminal reports whether the run has ended.
func (s RunStatus) Terminal() bool { return s == RunSucceeded || s == RunFailed || s == RunCancelled }

// RunParent is the tool call waiting for a run (the run_workflow tool): when
// the run ends, that submission's tools phase is woken.
type RunParent struct {
	SessionID    string `json:"session_id"`
	SubmissionID string `json:"submission_id"`
	Step         int    `json:"step"`
	CallID       string `json:"call_id"`
}

// WorkflowRun is one execution of a workflow. StartedAt is the script's
// now(): fixed for the run, so every evaluation sees the same time.
type WorkflowRun struct {
	ID         string `json:"id"`
	WorkflowID string `json:"workflow_id"`
	// WorkflowName is the workflow's name when the run started ("" for a
	// run_workflow script: WorkflowID "inline"); it names the run's trace.
	WorkflowName string          `json:"workflow_name,omitempty"`
	Owner        string          `json:"owner,omitempty"` // who started it (a schedule's owner; run_workflow: the calling session's)
	Script       string          `json:"script"`          // copied at start: editing a workflow never changes a running run
	Input        json.RawMessage `json:"input,omitempty"`
	Status       RunStatus       `json:"status"`
	Result       json.RawMessage `json:"result,omitempty"`
	Error        string          `json:"error,omitempty"`
	ScheduleID   string          `json:"schedule_id,omitempty"`
	ScheduledAt  time.Time       `json:"scheduled_at,omitempty"`
	Parent       *RunParent      `json:"parent,omitempty"`
	// Cancel is set when someone asked to cancel the run: no node starts
	// any more, every unfinished node's turn is cancelled, then the run
	// ends CANCELLED (repair finishes a cancel whose asker died).
	Cancel      *Cancel `json:"cancel,omitempty"`
	Evaluations int     `json:"evaluations"`
	// ResultsSeen is how many node results the last evaluation saw: a
	// wake-up that brings none new skips evaluating again.
	ResultsSeen int `json:"results_seen,omitempty"`
	// StartedBelow: every node whose Seq is below it has a result or an
	// accepted turn (the evaluation that recorded it started them), so an
	// evaluation starts only the pending nodes at or above it, without
	// reading any node's turn. 0 (a run from before it) starts every
	// pending node again: create-if-absent, only slower.
	StartedBelow int `json:"started_below,omitempty"`
	// Starting is set when an evaluation stopped starting nodes near its
	// deadline and woke the run to go on: the next wake-up evaluates even
	// though no new result arrived.
	Starting bool `json:"starting,omitempty"`
	// Trace is the W3C traceparent of the run's start span: a run is one
	// trace, every evaluation a span in it (the wake-ups' own context, a
	// node's end, travels in messages and becomes a link). Metadata, like
	// Submission.Trace: no state of the run depends on it.
	Trace     string    `json:"trace,omitempty"`
	Version   int64     `json:"version"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// NodeSpec is the agent work a node asks for: a turn in a session of its
// own.
type NodeSpec struct {
	Prompt string       `json:"prompt"`
	Model  string       `json:"model,omitempty"`
	System string       `json:"system,omitempty"`
	Tools  []ToolConfig `json:"tools,omitempty"` // nil = every built-in tool
	Limits Limits       `json:"limits,omitempty"`
}

// NodeResult is a finished node as the script sees it: a failure is a
// value, not an abort.
type NodeResult struct {
	OK     bool   `json:"ok"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// WorkflowNode is one node of a run: its identity (from the run id and the
// call's position, or an explicit key), what it asked for, the child turn
// running it, and its result once that turn ended.
type WorkflowNode struct {
	RunID        string      `json:"run_id"`
	ID           string      `json:"id"`
	Seq          int         `json:"seq"`
	Key          string      `json:"key,omitempty"`
	Spec         NodeSpec    `json:"spec"`
	SessionID    string      `json:"session_id,omitempty"`
	SubmissionID string      `json:"submission_id,omitempty"`
	Result       *NodeResult `json:"result,omitempty"`
	CreatedAt    time.Time   `json:"created_at"`
}

// Schedule starts runs of a workflow on a cron or rate expression. A
// firing's run id derives from (schedule id, scheduled time), so a
// duplicate firing is the same run.
type Schedule struct {
	ID         string          `json:"id"`
	WorkflowID string          `json:"workflow_id"`
	Expression string          `json:"expression"` // "rate(5 minutes)" | "cron(0 12 * * ? *)"
	Input      json.RawMessage `json:"input,omitempty"`
	Owner      string          `json:"owner,omitempty"`  // its runs belong to it
	Paused     bool            `json:"paused,omitempty"` // a paused schedule does not fire
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at,omitzero"`
}

// WorkflowRef marks a session that runs a workflow node.
type WorkflowRef struct {
	RunID  string `json:"run_id"`
	NodeID string `json:"node_id"`
}

// EvalRequest is one evaluation of a run's script (the isolate protocol,
// JSON on stdin): the script against the node results known so far.
type EvalRequest struct {
	Script   string                `json:"script"`
	Input    json.RawMessage       `json:"input,omitempty"`
	RunID    string                `json:"run_id"`
	Now      time.Time             `json:"now"`
	Results  map[string]NodeResult `json:"results,omitempty"` // by node id
	MaxSteps uint64                `json:"max_steps,omitempty"`
}

// Evaluation outcomes.
const (
	EvalDone    = "done"    // the script returned Value
	EvalPending = "pending" // nodes started and not yet resolved: Pending
	EvalFailed  = "failed"  // the script failed: Error says where and why
)

// PendingNode is a node the evaluation started whose result is unknown.
type PendingNode struct {
	ID   string   `json:"id"`
	Seq  int      `json:"seq"`
	Key  string   `json:"key,omitempty"`
	Spec NodeSpec `json:"spec"`
}

// EvalResponse is what an evaluation returns (JSON on stdout).
type EvalResponse struct {
	Status  string          `json:"status"`
	Value   json.RawMessage `json:"value,omitempty"`
	Pending []PendingNode   `json:"pending,omitempty"`
	Error   string          `json:"error,omitempty"`
	Steps   uint64          `json:"steps,omitempty"` // Starlark steps used
}

// Evaluator runs one evaluation somewhere isolated (a subprocess, a
// Lambda); the driver never evaluates a script in its own process.
type Evaluator interface {
	Evaluate(ctx context.Context, req EvalRequest) (EvalResponse, error)
}

// WorkflowStore keeps workflows, runs, nodes and schedules.
//   - Create* are create-if-absent: CreateWorkflow/CreateSchedule return
//     ErrExists for a taken id; CreateRun and PutNode return the existing
//     record and created=false (a duplicate firing, a replayed evaluation).
//   - UpdateRun is conditional on Version (ErrConflict / ErrNotFound), like
//     UpdateSubmission.
//   - SetNodeResult writes a node's result once; the first result wins and
//     a later call is a no-op. ErrNotFound if the node does not exist.
//   - ListNodes returns a run's nodes in Seq order.
//   - ListWorkflows returns up to limit (≤ 0: all) workflows, newest id
//     first; only owner's when owner is not "" (a list for a principal;
//     "" is an operator's: everyone's). Eventually consistent on DynamoDB
//     (a sparse global index): one created a moment ago may be missing.
//   - ListUnfinishedRuns returns up to limit (≤ 0: all) RUNNING runs,
//     oldest UpdatedAt first: the repair sweep's index. It is eventually
//     consistent on DynamoDB (a sparse global index): a run ended a moment
//     ago may still be listed, one just created or touched may be missing
//     or listed with its previous UpdatedAt.
//   - ListSchedules returns every schedule, paused ones included, in id
//     order (eventually consistent on DynamoDB: one created, paused or
//     deleted a moment ago may be listed as it was). Callers filter by
//     workflow or owner; schedules are few.
//   - UpdateSchedule replaces the stored schedule s.ID with s (the caller
//     changes only Paused and UpdatedAt) and returns it; ErrNotFound if
//     there is none. It never creates: an update racing a delete — a
//     pause or resume that lost to it — cannot bring the schedule back.
//     Schedules carry no version (last writer wins): they change only by
//     pause and resume, whose write order with the Scheduler (see
//     Scheduler) keeps a settled schedule consistent without one.
//   - DeleteSchedule removes schedule id; an absent one is not an error
//     (a repeated delete succeeds).
type WorkflowStore interface {
	CreateWorkflow(ctx context.Context, w Workflow) (Workflow, error)
	GetWorkflow(ctx context.Context, id string) (Workflow, error)
	ListWorkflows(ctx context.Context, owner string, limit int) ([]Workflow, error)
	CreateRun(ctx context.Context, r WorkflowRun) (WorkflowRun, bool, error)
	GetRun(ctx context.Context, id string) (WorkflowRun, error)
	UpdateRun(ctx context.Context, r WorkflowRun, expected int64) (WorkflowRun, error)
	ListRuns(ctx context.Context, workflowID string, limit int) ([]WorkflowRun, error)
	ListUnfinishedRuns(ctx context.Context, limit int) ([]WorkflowRun, error)
	PutNode(ctx context.Context, n WorkflowNode) (WorkflowNode, bool, error)
	SetNodeResult(ctx context.Context, runID, nodeID string, res NodeResult) error
	ListNodes(ctx context.Context, runID string) ([]WorkflowNode, error)
	CreateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	GetSchedule(ctx context.Context, id string) (Schedule, error)
	ListSchedules(ctx context.Context) ([]Schedule, error)
	UpdateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	DeleteSchedule(ctx context.Context, id string) error
}

// Scheduler registers a workflow schedule where it fires: EventBridge
// Scheduler on AWS (a schedule in the deployment's group whose target is
// the workflow queue); locally there is none (the dev ticker reads the
// WorkflowStore). The WorkflowStore is the truth about a schedule; the
// workflow driver drops a firing of a schedule the store has paused or no
// longer has, so the Scheduler only has to stop firing eventually.
//   - Create is called before the schedule is stored (a schedule the store
//     shows always fires) and must be idempotent per schedule id (a repeat
//     after a lost answer succeeds); an expression the scheduler refuses is
//     an error wrapping ErrInvalid.
//   - Update rewrites the registration of s whole (expression, target) with
//     its state from s.Paused (EventBridge: DISABLED / ENABLED). It never
//     creates: an absent schedule is ErrNotFound (a delete won).
//   - Delete removes schedule id; an absent one is not an error.
//
// Writes are ordered so that a crash between the Scheduler's write and the
// store's never leaves a schedule firing that its owner asked to stop:
// pause is Update (disabled) then the store; delete is Delete then the
// store; resume is the store then Update (enabled). A crashed resume leaves
// a schedule the store shows active that does not fire until resume is
// asked again (pause and resume always write both, whatever the store
// showed).
type Scheduler interface {
	Create(ctx context.Context, s Schedule) error
	Update(ctx context.Context, s Schedule) error
	Delete(ctx context.Context, id string) error
}
