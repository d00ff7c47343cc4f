package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// Workflow limits.
const (
	MaxScriptBytes = 256 << 10
	MaxInputBytes  = 256 << 10
)

// RunStarter starts a run create-if-absent (the workflow driver).
type RunStarter interface {
	Start(ctx context.Context, run contracts.WorkflowRun) (contracts.WorkflowRun, error)
}

// WorkflowConfig serves /v1/workflows; nil Store = not served (404).
type WorkflowConfig struct {
	Store         contracts.WorkflowStore
	Runs          RunStarter
	CheckScript   func(name, src string) error // syntax and names, with line:col
	CheckSchedule func(expr string) error
	Scheduler     contracts.Scheduler // nil = the store is the schedule (local ticker)
	IDs           contracts.IDs
}

func (s *server) routeWorkflows(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/workflows", s.auth(s.workflows(s.createWorkflow)))
	mux.HandleFunc("GET /v1/workflows/{id}", s.auth(s.workflows(s.getWorkflow)))
	mux.HandleFunc("POST /v1/workflows/{id}/runs", s.auth(s.workflows(s.startRun)))
	mux.HandleFunc("GET /v1/workflows/{id}/runs", s.auth(s.workflows(s.listRuns)))
	mux.HandleFunc("GET /v1/workflows/{id}/runs/{rid}", s.auth(s.workflows(s.getRun)))
	mux.HandleFunc("POST /v1/workflows/{id}/schedules", s.auth(s.workflows(s.createSchedule)))
}

func (s *server) workflows(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.Workflow.Store == nil {
			writeError(w, http.StatusNotFound, "not_found", "workflows are not served here")
			return
		}
		h(w, r)
	}
}

type createWorkflowRequest struct {
	Name   string `json:"name"`
	Script string `json:"script"`
}

func (s *server) createWorkflow(w http.ResponseWriter, r *http.Request) {
	var req createWorkflowRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	req.Name = strings.TrimSpace(req.Name)
	switch {
	case req.Name == "" || len(req.Name) > 200:
		s.fail(w, r, fmt.Errorf("name must be 1–200 characters: %w", contracts.ErrInvalid))
		return
	case strings.TrimSpace(req.Script) == "":
		s.fail(w, r, fmt.Errorf("script is empty: %w", contracts.ErrInvalid))
		return
	case len(req.Script) > MaxScriptBytes:
		s.fail(w, r, fmt.Errorf("script of %d bytes exceeds %d: %w", len(req.Script), MaxScriptBytes, contracts.ErrTooLarge))
		return
	}
	if s.Workflow.CheckScript != nil {
		if err := s.Workflow.CheckScript(req.Name, req.Script); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	wf, err := s.Workflow.Store.CreateWorkflow(s.ctx(r), contracts.Workflow{
		ID: s.Workflow.IDs.New("wf"), Owner: "api", Name: req.Name, Script: req.Script, CreatedAt: s.Engine.Clock.Now(),
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, wf)
}

func (s *server) getWorkflow(w http.ResponseWriter, r *http.Request) {
	wf, err := s.Workflow.Store.GetWorkflow(s.ctx(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wf)
}

type startRunRequest struct {
	Input json.RawMessage `json:"input,omitempty"`
}

// startRun starts a run; with an Idempotency-Key the run id derives from
// (workflow, key), so a retried request is the same run (200, not 201).
func (s *server) startRun(w http.ResponseWriter, r *http.Request) {
	var req startRunRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(req.Input) > MaxInputBytes {
		s.fail(w, r, fmt.Errorf("input of %d bytes exceeds %d: %w", len(req.Input), MaxInputBytes, contracts.ErrTooLarge))
		return
	}
	wf, err := s.Workflow.Store.GetWorkflow(s.ctx(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := s.Workflow.IDs.New("run")
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		id = ids.KeyedRun(wf.ID, key)
	}
	now := s.Engine.Clock.Now()
	run, err := s.Workflow.Runs.Start(s.ctx(r), contracts.WorkflowRun{ID: id, WorkflowID: wf.ID, Script: wf.Script, Input: req.Input, StartedAt: now})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if !run.StartedAt.Equal(now) || run.Evaluations > 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, run)
}

func (s *server) listRuns(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Workflow.Store.GetWorkflow(s.ctx(r), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	runs, err := s.Workflow.Store.ListRuns(s.ctx(r), r.PathValue("id"), 100)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if runs == nil {
		runs = []contracts.WorkflowRun{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
}

// nodeView is a node with the turn running it.
type nodeView struct {
	contracts.WorkflowNode
	Submission *contracts.Submission `json:"submission,omitempty"`
}

type runView struct {
	contracts.WorkflowRun
	Nodes []nodeView `json:"nodes"`
}

func (s *server) getRun(w http.ResponseWriter, r *http.Request) {
	ctx := s.ctx(r)
	run, err := s.Workflow.Store.GetRun(ctx, r.PathValue("rid"))
	if err == nil && run.WorkflowID != r.PathValue("id") {
		err = fmt.Errorf("run %s of workflow %s: %w", r.PathValue("rid"), r.PathValue("id"), contracts.ErrNotFound)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	nodes, err := s.Workflow.Store.ListNodes(ctx, run.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	view := runView{WorkflowRun: run, Nodes: make([]nodeView, 0, len(nodes))}
	for _, n := range nodes {
		nv := nodeView{WorkflowNode: n}
		if subs, err := s.Journal.ListSubmissions(ctx, n.SessionID, "", 1); err == nil && len(subs) == 1 {
			nv.Submission = &subs[0]
			nv.SubmissionID = subs[0].ID
		}
		view.Nodes = append(view.Nodes, nv)
	}
	writeJSON(w, http.StatusOK, view)
}

type createScheduleRequest struct {
	Expression string          `json:"expression"`
	Input      json.RawMessage `json:"input,omitempty"`
}

func (s *server) createSchedule(w http.ResponseWriter, r *http.Request) {
	var req createScheduleRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.Workflow.CheckSchedule != nil {
		if err := s.Workflow.CheckSchedule(req.Expression); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	wf, err := s.Workflow.Store.GetWorkflow(s.ctx(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sc := contracts.Schedule{ID: s.Workflow.IDs.New("sch"), WorkflowID: wf.ID, Expression: req.Expression, Input: req.Input, CreatedAt: s.Engine.Clock.Now()}
	// Registered where it fires first: a schedule the store knows but
	// EventBridge refused would look live and never fire.
	if s.Workflow.Scheduler != nil {
		if err := s.Workflow.Scheduler.Create(s.ctx(r), sc); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if sc, err = s.Workflow.Store.CreateSchedule(s.ctx(r), sc); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sc)
}
