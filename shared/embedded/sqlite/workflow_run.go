package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A run's workflow_id and started_at columns are written once, at creation:
// they place the run in its workflow's list, as the DynamoDB adapter's list
// pointer does, and an update does not move it. Its status and updated_at
// columns follow every write (CreateRun, UpdateRun): the repair sweep's
// index, workflow_runs_unfinished (status, updated_at, id).

// CreateRun stores r with Version 1. If a run with its id exists, it
// returns that run, unchanged, and created=false.
func (w *Workflows) CreateRun(ctx context.Context, r contracts.WorkflowRun) (contracts.WorkflowRun, bool, error) {
	if r.ID == "" {
		return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run: empty id: %w", contracts.ErrInvalid)
	}
	r.Version = 1
	body, err := json.Marshal(r)
	if err != nil {
		return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run %s: %w", r.ID, err)
	}
	res, err := w.s.exec(ctx, `INSERT INTO workflow_runs
		(id, workflow_id, version, status, started_at, updated_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`,
		r.ID, r.WorkflowID, r.Version, string(r.Status), nanos(r.StartedAt), nanos(r.UpdatedAt), body)
	if err != nil {
		return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run %s: %w", r.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return r, true, nil
	}
	// The id is taken by a committed row, which is never deleted: reading
	// it outside the insert is safe.
	existing, err := w.GetRun(ctx, r.ID)
	if err != nil {
		return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run %s: reading existing: %w", r.ID, err)
	}
	return existing, false, nil
}

// GetRun returns the run or ErrNotFound.
func (w *Workflows) GetRun(ctx context.Context, id string) (contracts.WorkflowRun, error) {
	var r contracts.WorkflowRun
	if err := w.s.getBody(ctx, &r, `SELECT body FROM workflow_runs WHERE id = ?`, id); err != nil {
		return contracts.WorkflowRun{}, fmt.Errorf("getting workflow run %s: %w", id, err)
	}
	return r, nil
}

// UpdateRun writes r with Version expected+1 if the stored version is
// expected; otherwise ErrConflict (ErrNotFound if absent).
func (w *Workflows) UpdateRun(ctx context.Context, r contracts.WorkflowRun, expected int64) (contracts.WorkflowRun, error) {
	r.Version = expected + 1
	body, err := json.Marshal(r)
	if err != nil {
		return contracts.WorkflowRun{}, fmt.Errorf("updating workflow run %s: %w", r.ID, err)
	}
	res, err := w.s.exec(ctx, `UPDATE workflow_runs SET version = ?, status = ?, updated_at = ?, body = ?
		WHERE id = ? AND version = ?`,
		r.Version, string(r.Status), nanos(r.UpdatedAt), body, r.ID, expected)
	if err != nil {
		return contracts.WorkflowRun{}, fmt.Errorf("updating workflow run %s: %w", r.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return contracts.WorkflowRun{}, fmt.Errorf("updating workflow run %s at version %d: %w",
			r.ID, expected, w.s.missOrConflict(ctx, `SELECT 1 FROM workflow_runs WHERE id = ?`, r.ID))
	}
	return r, nil
}

// ListRuns returns up to limit (≤ 0: all) runs of the workflow, newest
// StartedAt first (ties: greater id first).
func (w *Workflows) ListRuns(ctx context.Context, workflowID string, limit int) ([]contracts.WorkflowRun, error) {
	rows, err := w.s.query(ctx, `SELECT body FROM workflow_runs WHERE workflow_id = ?
		ORDER BY started_at DESC, id DESC LIMIT ?`, workflowID, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing runs of workflow %s: %w", workflowID, err)
	}
	out, err := scanBodies[contracts.WorkflowRun](rows)
	if err != nil {
		return nil, fmt.Errorf("listing runs of workflow %s: %w", workflowID, err)
	}
	return out, nil
}

// ListUnfinishedRuns returns up to limit (≤ 0: all) RUNNING runs, oldest
// UpdatedAt first (ties: smaller id first).
func (w *Workflows) ListUnfinishedRuns(ctx context.Context, limit int) ([]contracts.WorkflowRun, error) {
	rows, err := w.s.query(ctx, `SELECT body FROM workflow_runs WHERE status = ?
		ORDER BY updated_at, id LIMIT ?`, string(contracts.RunRunning), limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing unfinished workflow runs: %w", err)
	}
	out, err := scanBodies[contracts.WorkflowRun](rows)
	if err != nil {
		return nil, fmt.Errorf("listing unfinished workflow runs: %w", err)
	}
	return out, nil
}
