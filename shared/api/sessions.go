package api

import (
	"fmt"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/policy"
	"github.com/cairnrun/cairn/shared/turn"
)

type sessionView = contracts.SessionView

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
	sess, err := s.Engine.CreateSession(s.ctx(r), principal(r).Name, spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sessionView{Session: sess, PendingApprovals: []contracts.Approval{}})
}

func (s *server) validateSpec(spec contracts.SessionSpec) error {
	if err := turn.CheckSpec(spec); err != nil {
		return err
	}
	if err := policy.Validate(spec.Policy); err != nil {
		return err
	}
	if err := s.Engine.CheckSandbox(spec.Sandbox); err != nil {
		return err
	}
	if _, err := s.Registry.Bind(spec.Tools, contracts.Binding{}); err != nil {
		return err
	}
	return s.Engine.CheckModel(spec.Model)
}

type sessionSummary = contracts.SessionSummary

// listSessions pages the principal's sessions (an operator's: everyone's),
// newest first, as summaries.
func (s *server) listSessions(w http.ResponseWriter, r *http.Request) {
	p, err := pageParams(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	owner := listOwner(r)
	key := func(x sessionSummary) string { return x.ID }
	list, pos, more, err := window(p, key, func(n int) ([]sessionSummary, error) {
		all, err := s.Journal.ListSessions(s.ctx(r), owner, n)
		out := make([]sessionSummary, len(all))
		for i, x := range all {
			out[i] = sessionSummary{ID: x.ID, Owner: x.Owner, Model: x.Spec.Model, Head: x.Head, Active: x.Active,
				Workflow: x.Workflow, Version: x.Version, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
		}
		return out, err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, next := page(list, pos, more, key, MaxPageBytes)
	writeJSON(w, http.StatusOK, listPage("sessions", items, next))
}

func (s *server) getSession(w http.ResponseWriter, r *http.Request) {
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
	if pending == nil {
		pending = []contracts.Approval{}
	}
	writeJSON(w, http.StatusOK, sessionView{Session: sess, PendingApprovals: pending})
}

// getTranscript pages the path root → head, or → ?leaf= when given
// (default limit MaxPageLimit nodes).
func (s *server) getTranscript(w http.ResponseWriter, r *http.Request) {
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
	q := r.URL.Query()
	tree := false
	switch q.Get("tree") {
	case "", "0", "false":
	case "1", "true":
		tree = true
	default:
		s.fail(w, r, fmt.Errorf("tree=%q: want 1 or 0: %w", quoteClip(q.Get("tree")), contracts.ErrInvalid))
		return
	}
	if tree && q.Get("leaf") != "" {
		s.fail(w, r, fmt.Errorf("tree=1 and leaf= together: the tree holds every leaf: %w", contracts.ErrInvalid))
		return
	}
	leaf := sess.Head
	if l := q.Get("leaf"); l != "" {
		n, err := s.Transcript.GetNode(s.ctx(r), l)
		if err != nil || n.SessionID != sess.ID {
			s.fail(w, r, fmt.Errorf("node %s in session %s: %w", l, sess.ID, contracts.ErrNotFound))
			return
		}
		leaf = l
	}
	var nodes []contracts.Node
	if tree {
		if nodes, err = s.Engine.Tree(s.ctx(r), sess.ID); err != nil {
			s.fail(w, r, err)
			return
		}
	} else if leaf != "" {
		if nodes, err = s.Transcript.Path(s.ctx(r), leaf); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	key := func(n contracts.Node) string { return n.ID }
	list, pos, more, _ := window(p, key, fromSlice(nodes))
	items, next := page(list, pos, more, key, MaxPageBytes)
	writeJSON(w, http.StatusOK, listPage("nodes", items, next))
}
