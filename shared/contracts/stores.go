package contracts

import (
	"context"
	"time"
)

// JournalStore persists sessions, submissions and tool records.
//
// Contract (every adapter, checked by the journaltest conformance suite):
//   - Create* are create-if-absent. CreateSession on an existing id returns
//     ErrExists. CreateSubmission is idempotent on (session, idempotency
//     key): a second create with the same key returns the first record and
//     created=false, whatever else differs.
//   - Update* are conditional on the caller's expected version: the write
//     happens only if the stored version equals expected, and stores
//     expected+1 (the returned record carries it). Otherwise ErrConflict
//     (ErrNotFound if absent). A losing writer never overwrites.
//   - MarkToolStarted and PutToolResult are create-if-absent: repeating them
//     is harmless and the first result written wins.
//   - Safe for concurrent use by many goroutines and processes.
type JournalStore interface {
	CreateSession(ctx context.Context, s Session) (Session, error)
	GetSession(ctx context.Context, id string) (Session, error)
	UpdateSession(ctx context.Context, s Session, expected int64) (Session, error)
	// ListSessions returns up to limit sessions (≤ 0: all), newest id
	// first, only those whose Owner is owner when owner is not "" (""
	// lists everyone's: for operators). A filtered list still holds up
	// to limit matching sessions when that many exist.
	ListSessions(ctx context.Context, owner string, limit int) ([]Session, error)

	CreateSubmission(ctx context.Context, s Submission) (sub Submission, created bool, err error)
	GetSubmission(ctx context.Context, id string) (Submission, error)
	UpdateSubmission(ctx context.Context, s Submission, expected int64) (Submission, error)
	// ListSubmissions returns a session's submissions in creation order
	// (ids are time-ordered), only those in phase when phase is not "", at
	// most limit (≤ 0: all).
	ListSubmissions(ctx context.Context, sessionID string, phase Phase, limit int) ([]Submission, error)
	// ListUnfinished returns non-terminal submissions (the sparse repair
	// index), oldest update first.
	ListUnfinished(ctx context.Context, limit int) ([]Submission, error)

	MarkToolStarted(ctx context.Context, submissionID string, step int, callID string) error
	PutToolResult(ctx context.Context, submissionID string, step int, r ToolResult) error
	// ToolRecords returns the records of one step keyed by call id.
	ToolRecords(ctx context.Context, submissionID string, step int) (map[string]ToolRecord, error)
}

// TranscriptStore holds the append-only transcript tree.
//
// Put is create-if-absent on Node.ID: re-putting an existing id is a no-op
// (nil error). Path returns root → leaf following Parent links.
type TranscriptStore interface {
	PutNode(ctx context.Context, n Node) error
	GetNode(ctx context.Context, id string) (Node, error)
	Path(ctx context.Context, leaf string) ([]Node, error)
}

// Stream is what the stream store holds under one stream key.
type Stream struct {
	Chunks []ModelEvent   `json:"chunks"`
	Done   *ModelResponse `json:"done,omitempty"` // completion marker
}

// StreamStore keeps model stream chunks and the completion marker under the
// stream key so a finished stream is never bought twice.
//
// PutChunks stores evs as chunks first, first+1, … in one write, each
// create-if-absent on (key, seq): writers batch chunks that arrive close
// together. Complete is create-if-absent on key (the first completion wins)
// and returns the completion stored: resp when this call wrote it, else the
// one written first — from the same write where the store can (no read of
// the stream after it). GetStream on an unknown key returns an empty Stream
// and nil error.
type StreamStore interface {
	PutChunks(ctx context.Context, key string, first int, evs ...ModelEvent) error
	Complete(ctx context.Context, key string, resp ModelResponse) (ModelResponse, error)
	GetStream(ctx context.Context, key string) (Stream, error)
}

// Event types shown to clients through the events long-poll.
const (
	EventTextDelta      = "text_delta"
	EventToolStarted    = "tool_started"
	EventToolFinished   = "tool_finished"
	EventApprovalNeeded = "approval_needed"
	EventStep           = "step"
	EventCommitted      = "committed"
	EventFailed         = "failed"
	EventCancelled      = "cancelled" // the turn's end when it was cancelled; Text says by whom and why
	EventRetried        = "retried"   // a FAILED turn was retried: it resumes at Step
	// EventApprovalDecided: approval ApprovalID was decided; Text is
	// "<decision> by <principal>" and ": <reason>" when one was given.
	EventApprovalDecided = "approval_decided"
	// EventRepaired: repair acted on the turn (re-drove a phase, started a
	// new attempt, denied expired approvals, finished a cancel, failed it);
	// Text is "<action>: <why>".
	EventRepaired = "repaired"
)

// Honest events: what a follower needs to show each step's final text once
// and every tool call's single end.
const (
	// EventStreamDiscarded says attempt Attempt of model step Step was
	// abandoned (its stream broke, its process died, or the turn ended
	// before it completed): followers drop the text_delta events of that
	// (Step, Attempt), including any that arrive after this one. It is
	// written when a new attempt of the step starts, before that attempt's
	// own text (or when the turn fails with the step's stream incomplete),
	// under key discard/<step>/<attempt>.
	EventStreamDiscarded = "stream_discarded"
	// EventToolDenied is a call's terminal event when the policy or an
	// approver denied it: it never ran. Text is the denial.
	EventToolDenied = "tool_denied"
	// EventToolInterrupted is a call's terminal event when it will not
	// finish: it started and its outcome is unknown (it is never re-run),
	// or the turn ended before it ran or finished. Text says which.
	//
	// EventToolFinished, EventToolDenied and EventToolInterrupted share one
	// event key per (submission, step, call), tool_finished/<step>/<call>,
	// and are written once the call's result is recorded (from the recorded
	// result, which the first writer wins): a call gets exactly one of them,
	// however often the tools phase re-runs.
	EventToolInterrupted = "tool_interrupted"
)

// Event is one progress record of a submission.
type Event struct {
	Seq          int64     `json:"seq"`
	SubmissionID string    `json:"submission_id"`
	Key          string    `json:"-"`
	Type         string    `json:"type"`
	Step         int       `json:"step"`
	Attempt      int       `json:"attempt,omitempty"` // model attempt (1, 2, …) of a text_delta or stream_discarded event
	Text         string    `json:"text,omitempty"`
	Tool         string    `json:"tool,omitempty"`
	CallID       string    `json:"call_id,omitempty"`
	ApprovalID   string    `json:"approval_id,omitempty"`
	IsError      bool      `json:"is_error,omitempty"`
	At           time.Time `json:"at"`
}

// EventLog is an append-only, per-submission ordered event list.
//
// AppendEvents appends evs in order in one write, each idempotent on
// (SubmissionID, Key): a repeat is a no-op, so a re-driven handler does not
// duplicate progress. Seq is assigned by the store, strictly increasing
// within a submission. ListEvents returns events with Seq > after, in order.
//
// A text_delta's key names the model attempt that streams it (one writer:
// the attempt's lease holder; a re-driven phase starts a new attempt or
// resumes a finished stream, appending no text), and a store may guard it
// only against repeats from the same store instance — the DynamoDB
// adapter does, so a stream's text is written once, without an index copy
// to look its key up by. Every other event's key is guarded across
// processes.
type EventLog interface {
	AppendEvents(ctx context.Context, evs ...Event) error
	ListEvents(ctx context.Context, submissionID string, after int64, limit int) ([]Event, error)
}

// BlobStore keeps payloads too big for a journal item (claim checks),
// content-addressed: Put is create-if-absent on key.
type BlobStore interface {
	PutBlob(ctx context.Context, key string, data []byte) error
	GetBlob(ctx context.Context, key string) ([]byte, error)
}

// Clock is injected so tests and the isolate control time.
type Clock interface{ Now() time.Time }

// WallClock is the Clock of the real world: Now is time.Now. It is what
// every adapter and backend uses when no Clock is given; the zero value is
// ready to use and it is safe for concurrent use. Tests inject their own
// Clock instead.
type WallClock struct{}

var _ Clock = WallClock{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// IDs mints identifiers: New(prefix) returns prefix + "_" + a time-ordered,
// globally unique suffix (lexical order = creation order).
type IDs interface{ New(prefix string) string }

// Batcher is implemented by a store that can make several of its port
// calls one atomic write: the embedded SQLite store runs them in one
// transaction. Batch runs fn; every call made with the context fn is given
// is part of the batch, committed when fn returns nil and discarded when it
// returns an error (or the process dies first). A store without it (the
// AWS adapters) is used call by call; the engine then runs fn directly.
// Batching never weakens a rule: each call is as atomic as on its own, the
// batch only removes the points between them where a crash could fall.
type Batcher interface {
	Batch(ctx context.Context, fn func(ctx context.Context) error) error
}

// NodeCreator is an optional capability of a TranscriptStore: PutNode that
// says whether this call stored n (false: a node of that id was there,
// kept as it was). The engine caches only nodes it knows are the stored
// ones (the embedded SQLite store: the insert's rows affected).
type NodeCreator interface {
	CreateNode(ctx context.Context, n Node) (created bool, err error)
}

// SubmissionVersioner is an optional capability of a JournalStore: the
// stored version of a submission without reading and decoding its record
// (ErrNotFound if absent). A phase handed the record its previous phase
// wrote checks it is still current with it — a cancel since then bumps the
// version — before trusting it (the embedded SQLite store: one narrow
// indexed read). A store without it is read in full.
type SubmissionVersioner interface {
	SubmissionVersion(ctx context.Context, id string) (int64, error)
}
