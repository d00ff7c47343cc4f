package contracts

import (
	"encoding/json"
	"time"
)

// Phase is a submission's position in the four-phase turn:
// ACCEPTED → MODEL → TOOLS → (step+1, MODEL) … → COMMIT → COMMITTED.
type Phase string

const (
	PhaseAccepted  Phase = "ACCEPTED"
	PhaseModel     Phase = "MODEL"
	PhaseTools     Phase = "TOOLS"
	PhaseCommit    Phase = "COMMIT" // final answer recorded, not yet committed
	PhaseCommitted Phase = "COMMITTED"
	PhaseFailed    Phase = "FAILED"
	PhaseCancelled Phase = "CANCELLED"
)

// Terminal reports whether no further advance is possible.
func (p Phase) Terminal() bool {
	return p == PhaseCommitted || p == PhaseFailed || p == PhaseCancelled
}

// Cost is an estimate of what a turn cost (shared/pricing): its model
// tokens × the price table dated Prices, and on the AWS backend its
// orchestration (Submission.Orchestration × the AWS list prices dated
// AWSPrices). Amounts are in Currency units.
type Cost struct {
	Currency      string  `json:"currency"`
	Model         float64 `json:"model"`
	Orchestration float64 `json:"orchestration,omitempty"`
	Prices        string  `json:"prices,omitempty"`     // the model price table's date
	AWSPrices     string  `json:"aws_prices,omitempty"` // the AWS list prices' date
}

// Usage counts model tokens.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Orchestration is what a turn's handlers used of the priced AWS services:
// DynamoDB request units as DynamoDB reported them, SQS requests (each
// phase message's send, receive and delete, and visibility changes),
// S3 requests (claim checks), Lambda invocations and their GB-seconds.
type Orchestration struct {
	DynamoWriteUnits float64 `json:"dynamodb_write_units"`
	DynamoReadUnits  float64 `json:"dynamodb_read_units"`
	QueueRequests    int64   `json:"sqs_requests"`
	BlobPuts         int64   `json:"s3_puts,omitempty"`
	BlobGets         int64   `json:"s3_gets,omitempty"`
	Invocations      int64   `json:"lambda_invocations"`
	LambdaGBSeconds  float64 `json:"lambda_gb_seconds"`
}

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// EffectID is set by the tools phase when it runs the call (never
	// stored): the id mutating sandbox requests carry so that the sandbox
	// runs them once (ids.Effect). Empty = ID.
	EffectID string `json:"-"`
	// SessionID, SubmissionID and Step locate the call (set with EffectID,
	// never stored): a tool that starts work elsewhere names its parent.
	SessionID    string `json:"-"`
	SubmissionID string `json:"-"`
	Step         int    `json:"-"`
}

// ToolResult is the outcome of one tool call as reported to the model.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Approval is a pending or decided "ask" for one tool call.
type Approval struct {
	ID       string          `json:"id"`
	CallID   string          `json:"call_id"`
	Tool     string          `json:"tool"`
	Input    json.RawMessage `json:"input,omitempty"`
	Step     int             `json:"step"`
	Decision Decision        `json:"decision,omitempty"` // "" while pending
	Reason   string          `json:"reason,omitempty"`
	// DecidedBy is the principal who decided, or ApprovalTimeout when the
	// approval expired undecided (repair denied it).
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ApprovalTimeout is the DecidedBy of an approval denied because it
// expired undecided.
const ApprovalTimeout = "(timeout)"

// Submission is one turn's journal record, the single source of truth.
// Every change is a conditional write on Version (see JournalStore).
type Submission struct {
	ID             string     `json:"id"`
	SessionID      string     `json:"session_id"`
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
	Prompt         string     `json:"prompt"`
	Phase          Phase      `json:"phase"`
	Step           int        `json:"step"`
	Version        int64      `json:"version"`
	Attempt        int        `json:"attempt"`
	LeaseOwner     string     `json:"lease_owner,omitempty"`
	LeaseUntil     time.Time  `json:"lease_until,omitempty"`
	StreamKey      string     `json:"stream_key,omitempty"`
	ToolRequests   []ToolCall `json:"tool_requests,omitempty"`
	// Approvals are the current step's asks, pending and decided; when the
	// step advances its decided ones move to Decided.
	Approvals []Approval `json:"approvals,omitempty"`
	// Decided keeps every decided approval of the turn's earlier steps,
	// oldest first: who decided what, why and when stays in the record
	// after the turn ends.
	Decided []Approval `json:"decided,omitempty"`
	Leaf    string     `json:"leaf,omitempty"`
	Result  string     `json:"result,omitempty"`
	Error   string     `json:"error,omitempty"`
	Usage   Usage      `json:"usage"`
	// Orchestration is what the turn's handlers used on the AWS backend
	// (shared/meter; nil elsewhere).
	Orchestration *Orchestration `json:"orchestration,omitempty"`
	// Cost estimates Usage's price and, on the AWS backend, Orchestration's
	// (nil: neither is priced; Prices "" : the session's model has no price,
	// whatever Model says).
	Cost      *Cost     `json:"cost,omitempty"`
	StartedAt time.Time `json:"started_at,omitempty"`
	// ParkedAt is when the turn parked for an approval decision (zero
	// while not parked); ParkedNanos sums the time it spent parked before.
	// Parked time is not run time: Limits.MaxWallSeconds counts neither.
	ParkedAt    time.Time `json:"parked_at,omitempty"`
	ParkedNanos int64     `json:"parked_nanos,omitempty"`
	// Owner is the session's owner, copied when the submission is created.
	Owner string `json:"owner,omitempty"`
	// Trace is the W3C traceparent of the turn's accept span: what a
	// repair re-drive joins (the phases' own context travels in messages).
	Trace string `json:"trace,omitempty"`
	// Parent is the transcript node the turn starts from (a fork); "" is
	// the session head when the turn begins.
	Parent string `json:"parent,omitempty"`
	// Limits, when set, replace the session's limits for this turn (a
	// retry with raised limits).
	Limits *Limits `json:"limits,omitempty"`
	// Cancel is set when someone asked to cancel the turn; the turn ends
	// CANCELLED (repair finishes a cancel whose asker died).
	Cancel *Cancel `json:"cancel,omitempty"`
	// FailedPhase and FailedAttempt are the phase and attempt the turn was
	// in when it ended FAILED (what a retry resumes).
	FailedPhase   Phase `json:"failed_phase,omitempty"`
	FailedAttempt int   `json:"failed_attempt,omitempty"`
	// Resume is set on a retried turn waiting ACCEPTED for its session: the
	// phase it resumes at Step when it starts (the transcript to Leaf, the
	// stream and the tool records are kept).
	Resume Phase `json:"resume,omitempty"`
	// AttemptFloor is the Attempt a retry resumed from: attempts past it
	// count against the limit, and attempt numbers (stream keys, event
	// keys) never repeat one before the retry.
	AttemptFloor int `json:"attempt_floor,omitempty"`
	// Retries records every retry of the turn, oldest first.
	Retries   []Retry   `json:"retries,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Cancel is a request to end a turn CANCELLED: who asked, why, when.
type Cancel struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Retry is one retry of a FAILED turn: how it had failed, and who asked
// with what limits.
type Retry struct {
	Error   string    `json:"error"`
	Phase   Phase     `json:"phase"`
	Step    int       `json:"step"`
	Attempt int       `json:"attempt"`
	By      string    `json:"by"`
	Limits  *Limits   `json:"limits,omitempty"`
	At      time.Time `json:"at"`
}

// ToolRecord is the durable trace of one tool call: a "started" marker
// written before it runs and its result written after.
type ToolRecord struct {
	SubmissionID string      `json:"submission_id"`
	Step         int         `json:"step"`
	CallID       string      `json:"call_id"`
	Started      bool        `json:"started"`
	Result       *ToolResult `json:"result,omitempty"`
}
