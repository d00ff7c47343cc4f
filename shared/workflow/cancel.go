package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// Cancelling a run is, like cancelling a turn, a recorded request first
// (WorkflowRun.Cancel, a conditional write: an evaluation that started
// nodes meanwhile loses its own write, re-reads the run and sweeps them),
// then a sweep that cancels every unfinished node's turn, then the end:
// CANCELLED, and the waiting run_workflow call woken. A run with a cancel
// recorded never starts another node, and whoever wakes it — the asker,
// a node's end, repair's run sweep — finishes the cancel.

var _ contracts.RunCanceller = (*Driver)(nil)

// CancelRun asks for run runID of workflow workflowID to end CANCELLED (the
// ctx principal is recorded as who asked). Idempotent: a CANCELLED run is
// returned as it is; a run that SUCCEEDED or FAILED answers ErrConflict.
func (d *Driver) CancelRun(ctx context.Context, workflowID, runID, reason string) (contracts.WorkflowRun, error) {
	by := "system"
	if p, ok := contracts.PrincipalFrom(ctx); ok && p.Name != "" {
		by = p.Name
	}
	for range 8 {
		run, err := d.Store.GetRun(ctx, runID)
		if err == nil && run.WorkflowID != workflowID {
			err = fmt.Errorf("run %s of workflow %s: %w", runID, workflowID, contracts.ErrNotFound)
		}
		if err != nil {
			return run, err
		}
		switch {
		case run.Status == contracts.RunCancelled:
			return run, nil
		case run.Status.Terminal():
			return run, fmt.Errorf("run %s already ended %s: %w", run.ID, run.Status, contracts.ErrConflict)
		}
		if run.Cancel == nil {
			next := run
			next.Cancel = &contracts.Cancel{By: by, Reason: reason, At: d.now()}
			next.UpdatedAt = d.now()
			run, err = d.Store.UpdateRun(ctx, next, run.Version)
			if errors.Is(err, contracts.ErrConflict) {
				continue
			}
			if err != nil {
				return run, fmt.Errorf("cancelling run %s: %w", runID, err)
			}
			d.log().InfoContext(ctx, "workflow run cancel requested", "run_id", run.ID, "by", by)
		}
		return d.finishCancel(ctx, run)
	}
	return contracts.WorkflowRun{}, fmt.Errorf("cancelling run %s: too much contention: %w", runID, contracts.ErrConflict)
}

// finishCancel cancels every unfinished node's turn of run (whose cancel
// is recorded) and ends it CANCELLED; it returns the latest record.
func (d *Driver) finishCancel(ctx context.Context, run contracts.WorkflowRun) (contracts.WorkflowRun, error) {
	for range 8 {
		if err := d.sweep(ctx, run); err != nil {
			return run, err
		}
		got, err := d.Store.GetRun(ctx, run.ID)
		if err != nil || got.Status.Terminal() {
			return got, err
		}
		run = got // another writer moved it (an evaluation's last write): again
	}
	return run, fmt.Errorf("cancelling run %s: too much contention: %w", run.ID, contracts.ErrConflict)
}

// sweep cancels the unfinished nodes' turns and ends the run CANCELLED
// (a conditional write: lost when another writer moved the run).
func (d *Driver) sweep(ctx context.Context, run contracts.WorkflowRun) error {
	why := fmt.Sprintf("workflow run %s was cancelled", run.ID)
	nodes, err := d.Store.ListNodes(ctx, run.ID)
	if err != nil {
		return fmt.Errorf("listing nodes of run %s: %w", run.ID, err)
	}
	for _, n := range nodes {
		if n.Result != nil {
			continue
		}
		sub, ok, err := d.child(ctx, n)
		if err != nil {
			return err
		}
		if !ok {
			// Recorded, its turn not started: it never will be.
			if err := d.Store.SetNodeResult(ctx, run.ID, n.ID, contracts.NodeResult{OK: false, Error: why}); err != nil {
				return fmt.Errorf("recording result of node %s: %w", n.ID, err)
			}
			continue
		}
		if sub.Phase.Terminal() {
			continue
		}
		if _, err := d.Engine.Cancel(ctx, sub.SessionID, sub.ID, why); err != nil && !errors.Is(err, contracts.ErrConflict) {
			return fmt.Errorf("cancelling the turn of node %s: %w", n.ID, err)
		}
	}
	reason := "cancelled by " + run.Cancel.By
	if run.Cancel.Reason != "" {
		reason += ": " + run.Cancel.Reason
	}
	return d.finish(ctx, run, contracts.RunCancelled, nil, reason)
}

// sweepIfCancelled finishes the cancel of run runID if one is recorded.
func (d *Driver) sweepIfCancelled(ctx context.Context, runID string) error {
	run, err := d.Store.GetRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("reading run %s: %w", runID, err)
	}
	if run.Cancel == nil || run.Status.Terminal() {
		return nil
	}
	_, err = d.finishCancel(ctx, run)
	return err
}

// cancelChildRuns cancels the unfinished runs the cancelled turn sub
// started with run_workflow calls of its current step (a run's id derives
// from the call: ids.ToolRun), so a cancelled turn leaves no sub-agents
// running for nobody.
func (d *Driver) cancelChildRuns(ctx context.Context, sub contracts.Submission) error {
	for _, call := range sub.ToolRequests {
		run, err := d.Store.GetRun(ctx, ids.ToolRun(sub.ID, sub.Step, call.ID))
		if errors.Is(err, contracts.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the run of call %s: %w", call.ID, err)
		}
		if run.Status.Terminal() || run.Parent == nil || run.Parent.SubmissionID != sub.ID {
			continue
		}
		why := fmt.Sprintf("the turn that started it (%s) was cancelled", sub.ID)
		if _, err := d.CancelRun(ctx, run.WorkflowID, run.ID, why); err != nil && !errors.Is(err, contracts.ErrConflict) {
			return fmt.Errorf("cancelling run %s of call %s: %w", run.ID, call.ID, err)
		}
	}
	return nil
}
