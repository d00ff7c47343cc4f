package api

import (
	"fmt"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

// The control routes stop and resume work: cancel a turn or a workflow
// run, retry a FAILED turn.
func (s *server) routeControl(mux *router) {
	mux.HandleFunc("POST /v1/sessions/{id}/submissions/{sid}/cancel", s.auth(s.cancel))
	mux.HandleFunc("POST /v1/sessions/{id}/submissions/{sid}/retry", s.auth(s.retry))
	mux.HandleFunc("POST /v1/workflows/{id}/runs/{rid}/cancel", s.auth(s.workflows(s.cancelRun)))
}

type cancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

type retryRequest struct {
	// Limits, when set, replace the limits the retried turn runs under
	// (raise the one it tripped).
	Limits *contracts.Limits `json:"limits,omitempty"`
}

// optionalBody decodes the request's JSON object into v; an empty body is
// an empty object.
func optionalBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decode(w, r, v)
}

// cancelReason reads a cancel's optional body {"reason"}.
func cancelReason(w http.ResponseWriter, r *http.Request) (string, error) {
	var req cancelRequest
	if err := optionalBody(w, r, &req); err != nil {
		return "", err
	}
	return req.Reason, checkLen("reason", req.Reason, MaxReasonBytes)
}

// cancel ends a turn CANCELLED (POST …/submissions/{sid}/cancel, body
// {"reason"} optional): its owner or an operator may; idempotent.
func (s *server) cancel(w http.ResponseWriter, r *http.Request) {
	reason, err := cancelReason(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sess, err := s.session(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !principal(r).CanCancel(sess.Owner) {
		s.fail(w, r, hidden("session", sess.ID))
		return
	}
	sub, err := s.Engine.Cancel(s.ctx(r), sess.ID, r.PathValue("sid"), reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sub)
}

// retry resumes a FAILED turn from its failing step (POST
// …/submissions/{sid}/retry, body {"limits"} optional): only its owner may.
func (s *server) retry(w http.ResponseWriter, r *http.Request) {
	var req retryRequest
	if err := optionalBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	sess, err := s.ownSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sub, err := s.Engine.Retry(s.ctx(r), sess.ID, r.PathValue("sid"), req.Limits)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, sub)
}

// cancelRun cancels a workflow run and every unfinished node's turn (POST
// /v1/workflows/{id}/runs/{rid}/cancel): its owner or an operator may.
func (s *server) cancelRun(w http.ResponseWriter, r *http.Request) {
	reason, err := cancelReason(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.run(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !principal(r).CanCancel(run.Owner) {
		s.fail(w, r, hidden("run", run.ID))
		return
	}
	c, ok := s.Workflow.Runs.(contracts.RunCanceller)
	if !ok {
		s.fail(w, r, fmt.Errorf("cancelling runs is not served here: %w", contracts.ErrInvalid))
		return
	}
	got, err := c.CancelRun(s.ctx(r), run.WorkflowID, run.ID, reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, got)
}
