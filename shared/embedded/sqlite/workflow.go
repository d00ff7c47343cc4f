package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Workflow records (see workflow_run.go and workflow_node.go for runs and
// nodes) follow the journal's rules: a JSON body beside the columns that
// index it or condition a write, timestamps as the caller's RFC 3339 with
// nanoseconds.

// Workflows is the store's contracts.WorkflowStore: a view of the same
// file, a type of its own because the transcript port already gives Store
// a PutNode. Get it with Store.Workflows.
type Workflows struct{ s *Store }

var _ contracts.WorkflowStore = (*Workflows)(nil)

// Workflows returns the WorkflowStore on s's file.
func (s *Store) Workflows() *Workflows { return &Workflows{s: s} }

// CreateWorkflow stores wf, or returns ErrExists if its id is taken.
func (w *Workflows) CreateWorkflow(ctx context.Context, wf contracts.Workflow) (contracts.Workflow, error) {
	if wf.ID == "" {
		return contracts.Workflow{}, fmt.Errorf("creating workflow: empty id: %w", contracts.ErrInvalid)
	}
	body, err := json.Marshal(wf)
	if err != nil {
		return contracts.Workflow{}, fmt.Errorf("creating workflow %s: %w", wf.ID, err)
	}
	res, err := w.s.exec(ctx, `INSERT INTO workflows (id, body) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, wf.ID, body)
	if err != nil {
		return contracts.Workflow{}, fmt.Errorf("creating workflow %s: %w", wf.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return contracts.Workflow{}, fmt.Errorf("creating workflow %s: %w", wf.ID, contracts.ErrExists)
	}
	return wf, nil
}

// GetWorkflow returns the workflow or ErrNotFound.
func (w *Workflows) GetWorkflow(ctx context.Context, id string) (contracts.Workflow, error) {
	var wf contracts.Workflow
	if err := w.s.getBody(ctx, &wf, `SELECT body FROM workflows WHERE id = ?`, id); err != nil {
		return contracts.Workflow{}, fmt.Errorf("getting workflow %s: %w", id, err)
	}
	return wf, nil
}

// ListWorkflows returns up to limit workflows (≤ 0: all), newest id
// first; only owner's when owner is not "" (read from the JSON body, as
// ListSessions does: no column, so no migration).
func (w *Workflows) ListWorkflows(ctx context.Context, owner string, limit int) ([]contracts.Workflow, error) {
	rows, err := w.s.query(ctx, `SELECT body FROM workflows
		WHERE ? = '' OR json_extract(CAST(body AS TEXT), '$.owner') = ?
		ORDER BY id DESC LIMIT ?`, owner, owner, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing workflows: %w", err)
	}
	out, err := scanBodies[contracts.Workflow](rows)
	if err != nil {
		return nil, fmt.Errorf("listing workflows: %w", err)
	}
	return out, nil
}

// CreateSchedule stores sc, or returns ErrExists if its id is taken.
func (w *Workflows) CreateSchedule(ctx context.Context, sc contracts.Schedule) (contracts.Schedule, error) {
	if sc.ID == "" {
		return contracts.Schedule{}, fmt.Errorf("creating schedule: empty id: %w", contracts.ErrInvalid)
	}
	body, err := json.Marshal(sc)
	if err != nil {
		return contracts.Schedule{}, fmt.Errorf("creating schedule %s: %w", sc.ID, err)
	}
	res, err := w.s.exec(ctx, `INSERT INTO schedules (id, workflow_id, body) VALUES (?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, sc.ID, sc.WorkflowID, body)
	if err != nil {
		return contracts.Schedule{}, fmt.Errorf("creating schedule %s: %w", sc.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return contracts.Schedule{}, fmt.Errorf("creating schedule %s: %w", sc.ID, contracts.ErrExists)
	}
	return sc, nil
}

// GetSchedule returns the schedule or ErrNotFound.
func (w *Workflows) GetSchedule(ctx context.Context, id string) (contracts.Schedule, error) {
	var sc contracts.Schedule
	if err := w.s.getBody(ctx, &sc, `SELECT body FROM schedules WHERE id = ?`, id); err != nil {
		return contracts.Schedule{}, fmt.Errorf("getting schedule %s: %w", id, err)
	}
	return sc, nil
}

// ListSchedules returns every schedule in id order.
func (w *Workflows) ListSchedules(ctx context.Context) ([]contracts.Schedule, error) {
	rows, err := w.s.query(ctx, `SELECT body FROM schedules ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	out, err := scanBodies[contracts.Schedule](rows)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	return out, nil
}

// UpdateSchedule replaces schedule sc.ID with sc; ErrNotFound if there is
// none (an UPDATE never inserts, so a pause racing a delete cannot bring
// the schedule back).
func (w *Workflows) UpdateSchedule(ctx context.Context, sc contracts.Schedule) (contracts.Schedule, error) {
	if sc.ID == "" {
		return contracts.Schedule{}, fmt.Errorf("updating schedule: empty id: %w", contracts.ErrInvalid)
	}
	body, err := json.Marshal(sc)
	if err != nil {
		return contracts.Schedule{}, fmt.Errorf("updating schedule %s: %w", sc.ID, err)
	}
	res, err := w.s.exec(ctx, `UPDATE schedules SET workflow_id = ?, body = ? WHERE id = ?`, sc.WorkflowID, body, sc.ID)
	if err != nil {
		return contracts.Schedule{}, fmt.Errorf("updating schedule %s: %w", sc.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return contracts.Schedule{}, fmt.Errorf("updating schedule %s: %w", sc.ID, contracts.ErrNotFound)
	}
	return sc, nil
}

// DeleteSchedule removes schedule id; an absent one is not an error.
func (w *Workflows) DeleteSchedule(ctx context.Context, id string) error {
	if _, err := w.s.exec(ctx, `DELETE FROM schedules WHERE id = ?`, id); err != nil {
		return fmt.Errorf("deleting schedule %s: %w", id, err)
	}
	return nil
}
