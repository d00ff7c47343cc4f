package api

import (
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

type decideRequest struct {
	Decision contracts.Decision `json:"decision"`
	Reason   string             `json:"reason,omitempty"`
}

func (s *server) listApprovals(w http.ResponseWriter, r *http.Request) {
	pending, err := s.Engine.Pending(s.ctx(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if pending == nil {
		pending = []contracts.Approval{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": pending})
}

func (s *server) decide(w http.ResponseWriter, r *http.Request) {
	var req decideRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	a, err := s.Engine.Decide(s.ctx(r), r.PathValue("id"), r.PathValue("aid"), req.Decision, req.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}
