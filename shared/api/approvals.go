package api

import (
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

type decideRequest struct {
	Decision contracts.Decision `json:"decision"`
	Reason   string             `json:"reason,omitempty"`
}

// MaxReasonBytes bounds a decision's reason.
const MaxReasonBytes = 4 << 10

// listApprovals pages the session's pending approvals.
func (s *server) listApprovals(w http.ResponseWriter, r *http.Request) {
	p, err := pageParamsOr(r.URL.Query(), MaxPageLimit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sess, err := s.session(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pending, err := s.Engine.Pending(s.ctx(r), sess.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	key := func(a contracts.Approval) string { return a.ID }
	list, pos, more, _ := window(p, key, fromSlice(pending))
	items, next := page(list, pos, more, key, MaxPageBytes)
	writeJSON(w, http.StatusOK, listPage("approvals", items, next))
}

func (s *server) decide(w http.ResponseWriter, r *http.Request) {
	var req decideRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := checkLen("reason", req.Reason, MaxReasonBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	sess, err := s.ownSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The context carries the principal (auth put it there): the engine
	// records it as the approval's DecidedBy.
	a, err := s.Engine.Decide(s.ctx(r), sess.ID, r.PathValue("aid"), req.Decision, req.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}
