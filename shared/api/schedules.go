package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Schedules: created on a workflow, owned by their creator, listed,
// paused, resumed and deleted. A schedule lives in two places on AWS — the
// WorkflowStore (the truth, which the driver checks at every firing) and
// EventBridge Scheduler (contracts.Scheduler, which fires it) — and each
// change writes both, in the order that makes a crash between the two
// writes harmless to what the owner asked for:
//
//   - create: Scheduler first, then the store. A crash between leaves an
//     EventBridge schedule the store does not know; its firings are dropped
//     (the driver finds no schedule), so nothing runs that nobody sees.
//   - pause: Scheduler DISABLED first, then the store. A crash between
//     leaves a schedule shown active that no longer fires; pausing again
//     finishes. Store first would be safe too (the driver drops a paused
//     schedule's firings), but would keep EventBridge sending them.
//   - delete: Scheduler delete first, then the store. A crash between
//     leaves a schedule that is listed and never fires; deleting again
//     finishes (a Scheduler delete of an absent schedule succeeds), and a
//     pause or resume of it finishes the delete (below).
//   - resume: the store first, then Scheduler ENABLED. A crash between
//     leaves a schedule shown active that does not fire until resume is
//     asked again. Scheduler first would be worse: a concurrent pause
//     could end with the store active and Scheduler DISABLED with no crash
//     at all. In this order the last store write decides: if it is a
//     pause, the driver drops every firing; if it is a resume, every
//     pause's DISABLED came before it and its own ENABLED comes after.
//
// Pause and resume always write both, even when the store already shows
// the state asked for: repeating one repairs what a crash left, and a
// request that read a stale state (a concurrent pause or resume wrote in
// between) still leaves its own state in the store after its own
// Scheduler write. UpdatedAt moves only when the state changes (it is when
// the schedule last changed: the local ticker fires nothing due before a
// resume, and a repeated resume must not skip a firing). Neither ever
// creates a schedule: WorkflowStore.UpdateSchedule
// and Scheduler.Update are ErrNotFound for an absent one, so a pause or
// resume racing a delete cannot bring it back. A Scheduler.Update that
// finds the EventBridge schedule gone means a delete died between its
// writes (or is running now): the store's record is deleted too, and the
// answer is 404.

func (s *server) routeSchedules(mux *router) {
	mux.HandleFunc("POST /v1/workflows/{id}/schedules", s.auth(s.workflows(s.createSchedule)))
	mux.HandleFunc("GET /v1/workflows/{id}/schedules", s.auth(s.workflows(s.listWorkflowSchedules)))
	mux.HandleFunc("GET /v1/schedules", s.auth(s.workflows(s.listSchedules)))
	mux.HandleFunc("GET /v1/workflows/{id}/schedules/{sch}", s.auth(s.workflows(s.getSchedule)))
	mux.HandleFunc("POST /v1/workflows/{id}/schedules/{sch}/pause", s.auth(s.workflows(s.pauseSchedule)))
	mux.HandleFunc("POST /v1/workflows/{id}/schedules/{sch}/resume", s.auth(s.workflows(s.resumeSchedule)))
	mux.HandleFunc("DELETE /v1/workflows/{id}/schedules/{sch}", s.auth(s.workflows(s.deleteSchedule)))
}

type createScheduleRequest struct {
	Expression string          `json:"expression"`
	Input      json.RawMessage `json:"input,omitempty"`
}

// createSchedule schedules the path's workflow; only the workflow's owner
// may (its runs will be the schedule's owner's).
func (s *server) createSchedule(w http.ResponseWriter, r *http.Request) {
	var req createScheduleRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(req.Input) > MaxInputBytes {
		s.fail(w, r, fmt.Errorf("input of %d bytes exceeds %d: %w", len(req.Input), MaxInputBytes, contracts.ErrTooLarge))
		return
	}
	if s.Workflow.CheckSchedule != nil {
		if err := s.Workflow.CheckSchedule(req.Expression); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	wf, err := s.ownWorkflow(r) // another's: 404; an operator's read: 403
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.Engine.Clock.Now()
	sc := contracts.Schedule{ID: s.Workflow.IDs.New("sch"), WorkflowID: wf.ID, Expression: req.Expression, Input: req.Input,
		Owner: principal(r).Name, CreatedAt: now, UpdatedAt: now}
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

// schedule reads the path's schedule ({sch}) if it belongs to the path's
// workflow ({id}) and the principal may read it — and, with act, act on
// it (pause, resume, delete: its owner only); otherwise it is not found.
func (s *server) schedule(r *http.Request, act bool) (contracts.Schedule, error) {
	id := r.PathValue("sch")
	sc, err := s.Workflow.Store.GetSchedule(s.ctx(r), id)
	if err != nil {
		return sc, err
	}
	p := principal(r)
	if sc.WorkflowID != r.PathValue("id") || !p.CanRead(sc.Owner) || act && !p.CanAct(sc.Owner) {
		return contracts.Schedule{}, hidden("schedule", id)
	}
	return sc, nil
}

type scheduleSummary = contracts.ScheduleSummary

// listSchedulePage pages the schedules keep selects, in id order, as
// summaries.
func (s *server) listSchedulePage(w http.ResponseWriter, r *http.Request, keep func(contracts.Schedule) bool) {
	p, err := pageParams(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	all, err := s.Workflow.Store.ListSchedules(s.ctx(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var out []scheduleSummary
	for _, x := range all {
		if keep(x) {
			out = append(out, scheduleSummary{ID: x.ID, WorkflowID: x.WorkflowID, Expression: x.Expression, Owner: x.Owner,
				Paused: x.Paused, InputBytes: len(x.Input), CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt})
		}
	}
	key := func(x scheduleSummary) string { return x.ID }
	list, pos, more, err := window(p, key, fromSlice(out))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, next := page(list, pos, more, key, MaxPageBytes)
	writeJSON(w, http.StatusOK, listPage("schedules", items, next))
}

// listWorkflowSchedules pages the path's workflow's schedules the
// principal may read (GET /v1/workflows/{id}/schedules).
func (s *server) listWorkflowSchedules(w http.ResponseWriter, r *http.Request) {
	wf, err := s.workflow(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := principal(r)
	s.listSchedulePage(w, r, func(x contracts.Schedule) bool { return x.WorkflowID == wf.ID && p.CanRead(x.Owner) })
}

// listSchedules pages the principal's schedules across workflows (an
// operator's: everyone's) (GET /v1/schedules).
func (s *server) listSchedules(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	s.listSchedulePage(w, r, func(x contracts.Schedule) bool { return p.CanRead(x.Owner) })
}

func (s *server) getSchedule(w http.ResponseWriter, r *http.Request) {
	sc, err := s.schedule(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sc)
}

func (s *server) pauseSchedule(w http.ResponseWriter, r *http.Request)  { s.setPaused(w, r, true) }
func (s *server) resumeSchedule(w http.ResponseWriter, r *http.Request) { s.setPaused(w, r, false) }

// setPaused pauses or resumes the path's schedule (idempotent: 200 with
// the schedule either way), in the order the comment at the top gives.
func (s *server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	if err := noBody(w, r); err != nil {
		s.fail(w, r, err)
		return
	}
	sc, err := s.schedule(r, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := s.ctx(r)
	next := sc
	if sc.Paused != paused {
		next.UpdatedAt = s.Engine.Clock.Now()
	}
	next.Paused = paused
	store := func() error {
		var err error
		next, err = s.Workflow.Store.UpdateSchedule(ctx, next)
		return err
	}
	if paused { // Scheduler DISABLED, then the store
		err = s.registerState(r, next)
		if err == nil {
			err = store()
		}
	} else { // the store, then Scheduler ENABLED
		err = store()
		if err == nil {
			err = s.registerState(r, next)
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, next)
}

// registerState sets the Scheduler's state of sc (none locally). If the
// Scheduler no longer has the schedule, a delete died between its two
// writes or is running: the store's record is deleted too and the
// schedule is not found.
func (s *server) registerState(r *http.Request, sc contracts.Schedule) error {
	if s.Workflow.Scheduler == nil {
		return nil
	}
	err := s.Workflow.Scheduler.Update(s.ctx(r), sc)
	if !errors.Is(err, contracts.ErrNotFound) {
		return err
	}
	if err := s.Workflow.Store.DeleteSchedule(s.ctx(r), sc.ID); err != nil {
		return fmt.Errorf("finishing the delete of schedule %s: %w", sc.ID, err)
	}
	return hidden("schedule", sc.ID)
}

// deleteSchedule deletes the path's schedule: Scheduler first, then the
// store (204). A schedule already gone is 404, as one never there.
func (s *server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	sc, err := s.schedule(r, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.Workflow.Scheduler != nil {
		if err := s.Workflow.Scheduler.Delete(s.ctx(r), sc.ID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if err := s.Workflow.Store.DeleteSchedule(s.ctx(r), sc.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// noBody accepts an empty body or an empty JSON object (pause, resume).
func noBody(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return fmt.Errorf("request body over %d bytes: %w", MaxBody, contracts.ErrTooLarge)
	case err != nil:
		return fmt.Errorf("reading request body: %v: %w", err, contracts.ErrInvalid)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return decode(w, r, &struct{}{})
}
