package api

import (
	"fmt"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

// principal is the request's principal: authentication put it in the
// request context (an unauthenticated handler has none: the zero
// Principal, which may read nothing).
func principal(r *http.Request) contracts.Principal {
	p, _ := contracts.PrincipalFrom(r.Context())
	return p
}

// listOwner is the owner a list route filters by: the principal's name, or
// "" (everyone's) for an operator.
func listOwner(r *http.Request) string {
	if p := principal(r); !p.Operator {
		return p.Name
	}
	return ""
}

// hidden is the error for a record the principal may not see: the same
// 404 as a record that does not exist, so ids do not leak.
func hidden(kind, id string) error {
	return fmt.Errorf("%s %s: %w", kind, id, contracts.ErrNotFound)
}

// session reads the path's session ({id}) if the principal may read it;
// otherwise it is not found.
func (s *server) session(r *http.Request) (contracts.Session, error) {
	id := r.PathValue("id")
	sess, err := s.Journal.GetSession(s.ctx(r), id)
	if err != nil {
		return sess, err
	}
	if !principal(r).CanRead(sess.Owner) {
		return contracts.Session{}, hidden("session", id)
	}
	return sess, nil
}

// ownSession is session for acting in it (submit, approve, fork, retry):
// only its owner may. Another principal gets the 404 of session; an
// operator, which may read it and so knows it exists, gets a 403.
func (s *server) ownSession(r *http.Request) (contracts.Session, error) {
	sess, err := s.session(r)
	if err != nil {
		return sess, err
	}
	if !principal(r).CanAct(sess.Owner) {
		return contracts.Session{}, fmt.Errorf("session %s belongs to %s: an operator may read and cancel, not act in it: %w", sess.ID, sess.Owner, contracts.ErrPermission)
	}
	return sess, nil
}

// workflow reads the path's workflow ({id}) if the principal may read it;
// otherwise it is not found.
func (s *server) workflow(r *http.Request) (contracts.Workflow, error) {
	id := r.PathValue("id")
	wf, err := s.Workflow.Store.GetWorkflow(s.ctx(r), id)
	if err != nil {
		return wf, err
	}
	if !principal(r).CanRead(wf.Owner) {
		return contracts.Workflow{}, hidden("workflow", id)
	}
	return wf, nil
}

// ownWorkflow is workflow for acting on it (start a run): only its owner
// may; an operator, who may read it, gets a 403.
func (s *server) ownWorkflow(r *http.Request) (contracts.Workflow, error) {
	wf, err := s.workflow(r)
	if err != nil {
		return wf, err
	}
	if !principal(r).CanAct(wf.Owner) {
		return contracts.Workflow{}, fmt.Errorf("workflow %s belongs to %s: an operator may read it, not run it: %w", wf.ID, wf.Owner, contracts.ErrPermission)
	}
	return wf, nil
}

// whoami answers who the request's principal is (GET /v1/principal):
// {name, operator}, so a client can say whom it acts as and offer an
// operator's views only to one.
func (s *server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, principal(r))
}
