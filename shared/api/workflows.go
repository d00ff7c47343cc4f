package api

import (
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

// WorkflowConfig serves /v1/workflows; nil Store = not served (404).
type WorkflowConfig struct {
	Store         contracts.WorkflowStore
	Runs          contracts.WorkflowStarter    // the workflow driver
	CheckScript   func(name, src string) error // syntax and names, with line:col
	CheckSchedule func(expr string) error
	Scheduler     contracts.Scheduler // nil = the store is the schedule (local ticker)
	IDs           contracts.IDs
}

func (s *server) routeWorkflows(mux *router) {
	mux.HandleFunc("POST /v1/workflows", s.auth(s.workflows(s.createWorkflow)))
	mux.HandleFunc("GET /v1/workflows", s.auth(s.workflows(s.listWorkflows)))
	mux.HandleFunc("GET /v1/workflows/{id}", s.auth(s.workflows(s.getWorkflow)))
	mux.HandleFunc("POST /v1/workflows/{id}/runs", s.auth(s.workflows(s.startRun)))
	mux.HandleFunc("GET /v1/workflows/{id}/runs", s.auth(s.workflows(s.listRuns)))
	mux.HandleFunc("GET /v1/workflows/{id}/runs/{rid}", s.auth(s.workflows(s.getRun)))
	mux.HandleFunc("GET /v1/workflows/{id}/runs/{rid}/nodes", s.auth(s.workflows(s.listNodes)))
	mux.HandleFunc("GET /v1/workflows/{id}/runs/{rid}/nodes/{nid}", s.auth(s.workflows(s.getNode)))
	s.routeSchedules(mux)
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
		ID: s.Workflow.IDs.New("wf"), Owner: principal(r).Name, Name: req.Name, Script: req.Script, CreatedAt: s.Engine.Clock.Now(),
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, wf)
}

type workflowSummary = contracts.WorkflowSummary

// listWorkflows pages the principal's workflows (an operator's: everyone's),
// newest first, as summaries.
func (s *server) listWorkflows(w http.ResponseWriter, r *http.Request) {
	p, err := pageParams(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	owner := listOwner(r)
	key := func(x workflowSummary) string { return x.ID }
	list, pos, more, err := window(p, key, func(n int) ([]workflowSummary, error) {
		all, err := s.Workflow.Store.ListWorkflows(s.ctx(r), owner, n)
		out := make([]workflowSummary, len(all))
		for i, x := range all {
			out[i] = workflowSummary{ID: x.ID, Owner: x.Owner, Name: x.Name, ScriptBytes: len(x.Script), CreatedAt: x.CreatedAt}
		}
		return out, err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, next := page(list, pos, more, key, MaxPageBytes)
	writeJSON(w, http.StatusOK, listPage("workflows", items, next))
}

func (s *server) getWorkflow(w http.ResponseWriter, r *http.Request) {
	wf, err := s.workflow(r)
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
	wf, err := s.ownWorkflow(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := s.Workflow.IDs.New("run")
	if key != "" {
		id = ids.KeyedRun(wf.ID, key)
	}
	now := s.Engine.Clock.Now()
	run, err := s.Workflow.Runs.StartRun(s.ctx(r), contracts.WorkflowRun{ID: id, WorkflowID: wf.ID, WorkflowName: wf.Name, Owner: principal(r).Name,
		Script: wf.Script, Input: req.Input, StartedAt: now})
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

type runSummary = contracts.RunSummary

// listRuns pages a workflow's runs, newest first, as summaries, to those
// who may read the workflow: its runs are its owner's (only the owner
// starts or schedules them).
func (s *server) listRuns(w http.ResponseWriter, r *http.Request) {
	p, err := pageParams(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.workflow(r); err != nil {
		s.fail(w, r, err)
		return
	}
	key := func(x runSummary) string { return x.ID }
	list, pos, more, err := window(p, key, func(n int) ([]runSummary, error) {
		all, err := s.Workflow.Store.ListRuns(s.ctx(r), r.PathValue("id"), n)
		out := make([]runSummary, len(all))
		for i, x := range all {
			out[i] = runSummary{ID: x.ID, WorkflowID: x.WorkflowID, Owner: x.Owner, Status: x.Status, Error: clipText(x.Error, PreviewBytes),
				ScheduleID: x.ScheduleID, ScheduledAt: x.ScheduledAt, Parent: x.Parent, Evaluations: x.Evaluations,
				Version: x.Version, StartedAt: x.StartedAt, UpdatedAt: x.UpdatedAt}
		}
		return out, err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, next := page(list, pos, more, key, MaxPageBytes)
	writeJSON(w, http.StatusOK, listPage("runs", items, next))
}

type nodeView = contracts.NodeView

type runView = contracts.RunView

// run reads the path's run and checks it belongs to the path's workflow
// and the principal may read it (otherwise it is not found). A run is its
// starter's (Owner), whoever owns the workflow: run_workflow's inline runs
// have no workflow record.
func (s *server) run(r *http.Request) (contracts.WorkflowRun, error) {
	run, err := s.Workflow.Store.GetRun(s.ctx(r), r.PathValue("rid"))
	if err == nil && (run.WorkflowID != r.PathValue("id") || !principal(r).CanRead(run.Owner)) {
		return contracts.WorkflowRun{}, hidden("run", r.PathValue("rid"))
	}
	return run, err
}

// nodePage is one page of a run's nodes, summarised, in Seq order.
func (s *server) nodePage(r *http.Request, runID string, p pageReq, budget int) ([]nodeView, int, string, error) {
	ctx := s.ctx(r)
	nodes, err := s.Workflow.Store.ListNodes(ctx, runID)
	if err != nil {
		return nil, 0, "", err
	}
	key := func(n nodeView) string { return n.ID }
	list, pos, more, _ := window(p, key, func(n int) ([]nodeView, error) {
		out := make([]nodeView, min(n, len(nodes)))
		for i := range out {
			out[i] = nodeView{WorkflowNode: nodes[i], PromptBytes: len(nodes[i].Spec.Prompt)}
		}
		return out, nil
	})
	for i := range list {
		nv := &list[i]
		nv.Spec.Prompt = clipText(nv.Spec.Prompt, PreviewBytes)
		nv.Spec.System = clipText(nv.Spec.System, PreviewBytes)
		if nv.Result != nil {
			res := *nv.Result
			nv.OutputBytes = len(res.Output)
			res.Output, res.Error = clipText(res.Output, PreviewBytes), clipText(res.Error, PreviewBytes)
			nv.Result = &res
		}
		if subs, err := s.Journal.ListSubmissions(ctx, nv.SessionID, "", 1); err == nil && len(subs) == 1 {
			sum := summarize(subs[0])
			nv.Submission = &sum
			nv.SubmissionID = subs[0].ID
		}
	}
	items, next := page(list, pos, more, key, budget)
	return items, len(nodes), next, nil
}

func (s *server) getRun(w http.ResponseWriter, r *http.Request) {
	p, err := pageParamsOr(r.URL.Query(), MaxPageLimit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.run(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The run itself (script, input, result) is bounded by the limits on
	// each; its nodes get what is left of the page.
	view := runView{WorkflowRun: run}
	budget := max(MaxPageBytes-encodedSize(view), 1)
	if view.Nodes, view.NodeCount, view.NodesNext, err = s.nodePage(r, run.ID, p, budget); err != nil {
		s.fail(w, r, err)
		return
	}
	if view.Nodes == nil {
		view.Nodes = []nodeView{}
	}
	writeJSON(w, http.StatusOK, view)
}

// listNodes pages a run's nodes (GET …/runs/{rid}/nodes).
func (s *server) listNodes(w http.ResponseWriter, r *http.Request) {
	p, err := pageParamsOr(r.URL.Query(), MaxPageLimit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.run(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, _, next, err := s.nodePage(r, run.ID, p, MaxPageBytes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listPage("nodes", items, next))
}

// getNode returns one node of a run whole (GET …/runs/{rid}/nodes/{nid}).
func (s *server) getNode(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	nodes, err := s.Workflow.Store.ListNodes(s.ctx(r), run.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, n := range nodes {
		if n.ID == r.PathValue("nid") {
			writeJSON(w, http.StatusOK, n)
			return
		}
	}
	s.fail(w, r, fmt.Errorf("node %s of run %s: %w", r.PathValue("nid"), run.ID, contracts.ErrNotFound))
}
