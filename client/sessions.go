package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Session is a session as the API answers it: the record and its pending
// approvals.
type Session = contracts.SessionView

// SessionSummary is a session as lists show it: no spec but its model.
type SessionSummary = contracts.SessionSummary

// CreateSession creates a session (POST /v1/sessions). An empty Model is
// the server's default; nil Tools is every built-in tool that is not
// opt-in.
func (c *Client) CreateSession(ctx context.Context, spec contracts.SessionSpec) (Session, error) {
	var s Session
	return s, c.call(ctx, request{route: "POST /v1/sessions", body: spec}, &s)
}

// Sessions pages the caller's sessions, newest first (an operator's:
// everyone's).
func (c *Client) Sessions(ctx context.Context, opts ListOptions) (Page[SessionSummary], error) {
	return list[SessionSummary](ctx, c, request{route: "GET /v1/sessions", query: opts.query()}, "sessions")
}

// Session reads a session with its pending approvals.
func (c *Client) Session(ctx context.Context, id string) (Session, error) {
	var s Session
	return s, c.call(ctx, request{route: "GET /v1/sessions/{id}", args: []string{id}}, &s)
}

// TranscriptOptions selects a transcript: the path root → head, or → Leaf,
// or with Tree every branch (parents before children); paged (default
// limit 100 nodes).
type TranscriptOptions struct {
	ListOptions
	Leaf string
	Tree bool
}

// Transcript pages a session's transcript nodes.
func (c *Client) Transcript(ctx context.Context, sessionID string, opts TranscriptOptions) (Page[contracts.Node], error) {
	q := opts.query()
	if opts.Leaf != "" {
		q.Set("leaf", opts.Leaf)
	}
	if opts.Tree {
		q.Set("tree", "1")
	}
	return list[contracts.Node](ctx, c, request{route: "GET /v1/sessions/{id}/transcript", args: []string{sessionID}, query: q}, "nodes")
}

// SubmitOptions are a submission's optional parts.
type SubmitOptions struct {
	// Key is the Idempotency-Key: a submission with a key the session
	// already has returns the earlier one instead of starting a turn.
	Key string
	// Parent forks: the turn starts from this node of the session's
	// transcript tree instead of its head.
	Parent string
}

// Submit submits a turn to a session (POST /v1/sessions/{id}/submissions).
func (c *Client) Submit(ctx context.Context, sessionID, prompt string, opts SubmitOptions) (contracts.Submission, error) {
	body := struct {
		Prompt string `json:"prompt"`
		Parent string `json:"parent,omitempty"`
	}{prompt, opts.Parent}
	var h http.Header
	if opts.Key != "" {
		h = http.Header{"Idempotency-Key": {opts.Key}}
	}
	var s contracts.Submission
	return s, c.call(ctx, request{route: "POST /v1/sessions/{id}/submissions", args: []string{sessionID}, body: body, header: h}, &s)
}

// SubmissionSummary is a submission as lists show it: prompt, result and
// error cut to 200 bytes (their sizes in PromptBytes, ResultBytes), the
// number of pending approvals.
type SubmissionSummary = contracts.SubmissionSummary

// SubmissionListOptions pages a session's submissions; Phase keeps those
// in one phase.
type SubmissionListOptions struct {
	ListOptions
	Phase contracts.Phase
}

// Submissions pages a session's submissions, oldest first.
func (c *Client) Submissions(ctx context.Context, sessionID string, opts SubmissionListOptions) (Page[SubmissionSummary], error) {
	q := opts.query()
	if opts.Phase != "" {
		q.Set("phase", string(opts.Phase))
	}
	return list[SubmissionSummary](ctx, c, request{route: "GET /v1/sessions/{id}/submissions", args: []string{sessionID}, query: q}, "submissions")
}

// Submission reads a submission's journal record.
func (c *Client) Submission(ctx context.Context, sessionID, subID string) (contracts.Submission, error) {
	var s contracts.Submission
	return s, c.call(ctx, request{route: "GET /v1/sessions/{id}/submissions/{sid}", args: []string{sessionID, subID}}, &s)
}

// EventsOptions is one long-poll of a turn's events: those after seq
// After, waiting up to Wait (at most 25 s) for one; at most Limit (1-500;
// 0 = 500).
type EventsOptions struct {
	After int64
	Wait  time.Duration
	Limit int
}

// EventsPage is one long-poll's answer: the events, the seq to poll after
// next, the turn's phase, and Done on the page that reaches its end.
type EventsPage = contracts.EventsPage

// Events long-polls a turn's events once (Follow polls until the end).
func (c *Client) Events(ctx context.Context, sessionID, subID string, opts EventsOptions) (EventsPage, error) {
	q := url.Values{"after": {strconv.FormatInt(opts.After, 10)}}
	if opts.Wait > 0 {
		q.Set("wait", opts.Wait.String())
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var p EventsPage
	return p, c.call(ctx, request{route: "GET /v1/sessions/{id}/submissions/{sid}/events", args: []string{sessionID, subID}, query: q}, &p)
}

// SessionTurns lists a session's turns (at most 500, oldest first) with
// their phases: where per-turn long-polls start (FollowSession streams
// them all instead).
func (c *Client) SessionTurns(ctx context.Context, sessionID string) ([]Turn, error) {
	var out struct {
		Turns []Turn `json:"turns"`
	}
	return out.Turns, c.call(ctx, request{route: "GET /v1/sessions/{id}/events", args: []string{sessionID},
		header: http.Header{"Accept": {"application/json"}}}, &out)
}

// Turn is a submission of a session and its phase.
type Turn struct {
	ID    string          `json:"id"`
	Phase contracts.Phase `json:"phase"`
}

// Approvals pages a session's pending approvals.
func (c *Client) Approvals(ctx context.Context, sessionID string, opts ListOptions) (Page[contracts.Approval], error) {
	return list[contracts.Approval](ctx, c, request{route: "GET /v1/sessions/{id}/approvals", args: []string{sessionID}, query: opts.query()}, "approvals")
}

// Decide decides a pending approval: contracts.Allow or contracts.Deny,
// with a reason recorded beside who decided. Deciding the same way again
// is a no-op.
func (c *Client) Decide(ctx context.Context, sessionID, approvalID string, d contracts.Decision, reason string) (contracts.Approval, error) {
	body := struct {
		Decision contracts.Decision `json:"decision"`
		Reason   string             `json:"reason,omitempty"`
	}{d, reason}
	var a contracts.Approval
	return a, c.call(ctx, request{route: "POST /v1/sessions/{id}/approvals/{aid}", args: []string{sessionID, approvalID}, body: body}, &a)
}

// Cancel ends a turn CANCELLED (idempotent); reason is recorded.
func (c *Client) Cancel(ctx context.Context, sessionID, subID, reason string) (contracts.Submission, error) {
	body := struct {
		Reason string `json:"reason,omitempty"`
	}{reason}
	var s contracts.Submission
	return s, c.call(ctx, request{route: "POST /v1/sessions/{id}/submissions/{sid}/cancel", args: []string{sessionID, subID}, body: body}, &s)
}

// Retry resumes a FAILED turn from its failing step; limits, when not
// nil, replace the limits it runs under (raise the one it tripped).
func (c *Client) Retry(ctx context.Context, sessionID, subID string, limits *contracts.Limits) (contracts.Submission, error) {
	body := struct {
		Limits *contracts.Limits `json:"limits,omitempty"`
	}{limits}
	var s contracts.Submission
	return s, c.call(ctx, request{route: "POST /v1/sessions/{id}/submissions/{sid}/retry", args: []string{sessionID, subID}, body: body}, &s)
}

// Principal is who the API takes the caller to be: its name and whether it
// is an operator.
func (c *Client) Principal(ctx context.Context) (contracts.Principal, error) {
	var p contracts.Principal
	return p, c.call(ctx, request{route: "GET /v1/principal"}, &p)
}
