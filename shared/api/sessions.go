package api

import (
	"fmt"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/policy"
)

// sessionView is a session with its pending approvals.
type sessionView struct {
	contracts.Session
	PendingApprovals []contracts.Approval `json:"pending_approvals"`
}

func (s *server) createSession(w http.ResponseWriter, r *http.Request) {
	var spec contracts.SessionSpec
	if err := decode(w, r, &spec); err != nil {
		s.fail(w, r, err)
		return
	}
	if spec.Model == "" {
		spec.Model = s.DefaultModel
	}
	if spec.Tools == nil {
		for _, d := range s.Registry.Definitions() {
			if !d.OptIn {
				spec.Tools = append(spec.Tools, contracts.ToolConfig{Name: d.Name})
			}
		}
	}
	if err := s.validateSpec(spec); err != nil {
		s.fail(w, r, err)
		return
	}
	sess, err := s.Engine.CreateSession(s.ctx(r), "local", spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sessionView{Session: sess, PendingApprovals: []contracts.Approval{}})
}

func (s *server) validateSpec(spec contracts.SessionSpec) error {
	if err := policy.Validate(spec.Policy); err != nil {
		return err
	}
	if spec.Limits.MaxSteps < 0 || spec.Limits.MaxTokens < 0 || spec.Limits.MaxWallSeconds < 0 {
		return fmt.Errorf("limits must not be negative: %w", contracts.ErrInvalid)
	}
	if err := s.Engine.CheckSandbox(spec.Sandbox); err != nil {
		return err
	}
	if _, err := s.Registry.Bind(spec.Tools, contracts.Binding{}); err != nil {
		return err
	}
	return s.Engine.CheckModel(spec.Model)
}

func (s *server) listSessions(w http.ResponseWriter, r *http.Request) {
	list, err := s.Journal.ListSessions(s.ctx(r), 100)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if list == nil {
		list = []contracts.Session{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": list})
}

func (s *server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.Journal.GetSession(s.ctx(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pending, err := s.Engine.Pending(s.ctx(r), sess.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if pending == nil {
		pending = []contracts.Approval{}
	}
	writeJSON(w, http.StatusOK, sessionView{Session: sess, PendingApprovals: pending})
}

// getTranscript returns the path root → head, or → ?leaf= when given.
func (s *server) getTranscript(w http.ResponseWriter, r *http.Request) {
	sess, err := s.Journal.GetSession(s.ctx(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	leaf := sess.Head
	if l := r.URL.Query().Get("leaf"); l != "" {
		n, err := s.Transcript.GetNode(s.ctx(r), l)
		if err != nil || n.SessionID != sess.ID {
			s.fail(w, r, fmt.Errorf("node %s in session %s: %w", l, sess.ID, contracts.ErrNotFound))
			return
		}
		leaf = l
	}
	nodes := []contracts.Node{}
	if leaf != "" {
		if nodes, err = s.Transcript.Path(s.ctx(r), leaf); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes})
}
