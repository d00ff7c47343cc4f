package repair

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow"
)

// RunBatch bounds the workflow runs one pass examines (oldest UpdatedAt
// first: a woken run's evaluation touches it, moving it to the back).
const RunBatch = 500

// runs wakes every RUNNING run that has not been written for runStuckAfter:
// one whose first wake-up was never sent (its creator died between
// CreateRun and the wake-up) or whose wake-up was lost. The woken
// evaluation (its nonce starts with workflow.RepairNonce) runs even with no
// new node result, re-starts any node not yet started (create if absent)
// and touches the run, so a healthy run whose nodes are simply slow is woken
// at most about once per StuckAfter. Reports how many runs it woke; a failed
// wake-up does not stop the sweep (the errors are joined). It also reports
// how many unfinished runs it examined.
//
// The wake-up's nonce is fixed for the run's version within a window of
// StuckAfter, so passes more frequent than StuckAfter collapse into one
// wake-up in the FIFO dedup window rather than queue an evaluation each.
func (r *Repairer) runs(ctx context.Context, d *workflow.Driver) (scanned, woken int, err error) {
	stuckAfter := r.runStuckAfter()
	runs, err := d.Store.ListUnfinishedRuns(ctx, RunBatch)
	if err != nil {
		return 0, 0, fmt.Errorf("listing unfinished workflow runs: %w", err)
	}
	now := r.Engine.Clock.Now()
	window := now.Unix() / (int64(stuckAfter/time.Second) + 1)
	var errs []error
	for _, run := range runs {
		// The list may be stale (eventually consistent): an ended run is
		// left alone, and a wake-up of a just-ended one is a no-op.
		if run.Status != contracts.RunRunning || now.Sub(run.UpdatedAt) < stuckAfter {
			continue
		}
		nonce := workflow.RepairNonce + strconv.FormatInt(run.Version, 10) + ":" + strconv.FormatInt(window, 10)
		if err := d.Wake(ctx, run.ID, nonce); err != nil {
			errs = append(errs, err)
			continue
		}
		woken++
		r.log().InfoContext(ctx, "waking stuck workflow run", "run_id", run.ID, "workflow_id", run.WorkflowID,
			"evaluations", run.Evaluations, "idle", now.Sub(run.UpdatedAt).Round(time.Second))
	}
	return len(runs), woken, errors.Join(errs...)
}

// runDLQ ends, FAILED "poison: …", every run whose wake-up the workflow
// queue dead-lettered (its evaluations kept failing: the isolate could not
// be started, the store refused), wakes the tool call waiting for it, and
// deletes the dead message — a dead letter becomes a visible state rather
// than rotting. A dead-lettered schedule firing is logged and dropped.
func (r *Repairer) runDLQ(ctx context.Context, d *workflow.Driver) (int, error) {
	q, dlq := r.Engine.Queue, contracts.DLQ(contracts.QueueWorkflow)
	failed := 0
	for {
		ds, err := q.Receive(ctx, dlq, 10, time.Minute)
		if err != nil {
			return failed, fmt.Errorf("receiving from %s: %w", dlq, err)
		}
		if len(ds) == 0 {
			return failed, nil
		}
		for _, dl := range ds {
			m := dl.Message
			switch {
			case m.ScheduleID != "":
				r.log().ErrorContext(ctx, "schedule firing dead-lettered: dropped", "schedule_id", m.ScheduleID, "scheduled_at", m.ScheduledAt, "receives", dl.ReceiveCount)
			default:
				run, err := d.Store.GetRun(ctx, m.SubmissionID)
				if err != nil && !errors.Is(err, contracts.ErrNotFound) {
					return failed, fmt.Errorf("reading run %s: %w", m.SubmissionID, err)
				}
				if err == nil && run.Status == contracts.RunRunning {
					reason := fmt.Sprintf("poison: the run's wake-up was dead-lettered after %d deliveries (its evaluation kept failing; see the workflow function's log)", dl.ReceiveCount)
					if err := d.Fail(ctx, run, reason); err != nil {
						return failed, err
					}
					failed++
				}
			}
			if err := q.Delete(ctx, dlq, dl.Receipt); err != nil {
				return failed, fmt.Errorf("deleting from %s: %w", dlq, err)
			}
		}
	}
}
