package contracts

import "time"

// The API's answers that are not records themselves: a record with what
// goes beside it, and the summaries list routes hold (prompts, results and
// errors cut to a preview, their sizes beside; no scripts or inputs).
// shared/api writes them, the Go client and the console read them: one
// type each, so the three cannot drift apart.

// SessionView is a session with its pending approvals (GET and POST of a
// session).
type SessionView struct {
	Session
	PendingApprovals []Approval `json:"pending_approvals"`
}

// SessionSummary is a session as GET /v1/sessions lists it.
type SessionSummary struct {
	ID        string       `json:"id"`
	Owner     string       `json:"owner,omitempty"`
	Model     string       `json:"model,omitempty"`
	Head      string       `json:"head,omitempty"`
	Active    string       `json:"active,omitempty"`
	Workflow  *WorkflowRef `json:"workflow,omitempty"`
	Version   int64        `json:"version"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// SubmissionSummary is a turn as lists hold it: prompt and result cut to a
// preview (their sizes beside), and how many approvals wait.
type SubmissionSummary struct {
	ID               string    `json:"id"`
	SessionID        string    `json:"session_id"`
	IdempotencyKey   string    `json:"idempotency_key,omitempty"`
	Prompt           string    `json:"prompt"`
	PromptBytes      int       `json:"prompt_bytes"`
	Phase            Phase     `json:"phase"`
	Step             int       `json:"step"`
	Version          int64     `json:"version"`
	Attempt          int       `json:"attempt"`
	Result           string    `json:"result,omitempty"`
	ResultBytes      int       `json:"result_bytes,omitempty"`
	Error            string    `json:"error,omitempty"`
	Usage            Usage     `json:"usage"`
	Cost             *Cost     `json:"cost,omitempty"`
	PendingApprovals int       `json:"pending_approvals,omitempty"`
	StartedAt        time.Time `json:"started_at,omitzero"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// EventsPage is one answer of a turn's events long-poll: the events after
// the asked seq, where to continue, and whether the turn has ended.
type EventsPage struct {
	Events []Event `json:"events"`
	Next   int64   `json:"next"`
	Phase  Phase   `json:"phase"`
	Done   bool    `json:"done"`
}

// WorkflowSummary is a workflow as GET /v1/workflows lists it: no script,
// its size.
type WorkflowSummary struct {
	ID          string    `json:"id"`
	Owner       string    `json:"owner,omitempty"`
	Name        string    `json:"name"`
	ScriptBytes int       `json:"script_bytes"`
	CreatedAt   time.Time `json:"created_at"`
}

// RunSummary is a run as a workflow's runs list it.
type RunSummary struct {
	ID          string     `json:"id"`
	WorkflowID  string     `json:"workflow_id"`
	Owner       string     `json:"owner,omitempty"`
	Status      RunStatus  `json:"status"`
	Error       string     `json:"error,omitempty"`
	ScheduleID  string     `json:"schedule_id,omitempty"`
	ScheduledAt time.Time  `json:"scheduled_at,omitzero"`
	Parent      *RunParent `json:"parent,omitempty"`
	Evaluations int        `json:"evaluations"`
	Version     int64      `json:"version"`
	StartedAt   time.Time  `json:"started_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// NodeView is a run's node as the run lists it: its prompt and output cut
// to a preview (their sizes beside), with a summary of the turn running it.
type NodeView struct {
	WorkflowNode
	PromptBytes int                `json:"prompt_bytes"`
	OutputBytes int                `json:"output_bytes,omitempty"`
	Submission  *SubmissionSummary `json:"submission,omitempty"`
}

// RunView is a run with the first page of its nodes; NodesNext continues
// with the nodes route.
type RunView struct {
	WorkflowRun
	Nodes     []NodeView `json:"nodes"`
	NodeCount int        `json:"node_count"`
	NodesNext string     `json:"nodes_next_cursor"`
}

// ScheduleSummary is a schedule as lists hold it: no input, its size.
type ScheduleSummary struct {
	ID         string    `json:"id"`
	WorkflowID string    `json:"workflow_id"`
	Expression string    `json:"expression"`
	Owner      string    `json:"owner,omitempty"`
	Paused     bool      `json:"paused"`
	InputBytes int       `json:"input_bytes"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
}

// UsageSum is what some turns used and cost. Cost sums their estimates by
// currency, model and orchestration (turns without a price are counted in
// Turns and Usage only); Orchestration is the orchestration part of it
// (the AWS backend).
type UsageSum struct {
	Turns         int                `json:"turns"`
	Usage         Usage              `json:"usage"`
	Cost          map[string]float64 `json:"cost"`
	Orchestration map[string]float64 `json:"orchestration,omitempty"`
}

// SessionUsage is one session's UsageSum.
type SessionUsage struct {
	ID    string `json:"id"`
	Owner string `json:"owner"`
	UsageSum
}

// UsageReport is GET /v1/usage's answer: the sums of a principal's turns
// (Principal "" = every principal's, an operator's ask) between From and
// To, by principal and by session (the costliest first, at most a page;
// Truncated when there were more).
type UsageReport struct {
	Principal   string              `json:"principal,omitempty"`
	From        time.Time           `json:"from,omitzero"`
	To          time.Time           `json:"to"`
	Total       UsageSum            `json:"total"`
	ByPrincipal map[string]UsageSum `json:"by_principal"`
	Sessions    []SessionUsage      `json:"sessions"`
	Truncated   bool                `json:"truncated,omitempty"`
}
