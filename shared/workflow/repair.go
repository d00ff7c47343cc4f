package workflow

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Repair sweep defaults.
const (
	// DefaultStuckAfter is how long a RUNNING run may go without a write
	// before the sweep wakes it (stuckAfter ≤ 0).
	DefaultStuckAfter = time.Minute
	// RepairBatch bounds the runs one sweep examines (oldest UpdatedAt
	// first: a woken run's evaluation touches it, moving it to the back).
	RepairBatch = 500
)

// repairNonce prefixes the nonce of the sweep's wake-ups: their evaluation
// runs even when no new node result arrived (see evaluate).
const repairNonce = "repair:"

// Repair wakes every RUNNING run that has not been written for stuckAfter
// (default DefaultStuckAfter): one whose first wake-up was never sent (its
// creator died between CreateRun and the wake-up) or whose wake-up was
// lost. The woken evaluation re-starts any node not yet started (create if
// absent) and touches the run, so a healthy run whose nodes are simply
// slow is woken at most about once per stuckAfter. Reports how many runs it
// woke; a failed wake-up does not stop the sweep (the errors are joined).
//
// The wake-up's nonce is fixed for the run's version within a window of
// stuckAfter, so sweeps more frequent than stuckAfter collapse into one
// wake-up in the FIFO dedup window rather than queue an evaluation each.
func (d *Driver) Repair(ctx context.Context, stuckAfter time.Duration) (int, error) {
	if stuckAfter <= 0 {
		stuckAfter = DefaultStuckAfter
	}
	runs, err := d.Store.ListUnfinishedRuns(ctx, RepairBatch)
	if err != nil {
		return 0, fmt.Errorf("listing unfinished workflow runs: %w", err)
	}
	now := d.now()
	window := now.Unix() / (int64(stuckAfter/time.Second) + 1)
	woken := 0
	var errs []error
	for _, run := range runs {
		// The list may be stale (eventually consistent): an ended run is
		// left alone, and a wake-up of a just-ended one is a no-op.
		if run.Status != contracts.RunRunning || now.Sub(run.UpdatedAt) < stuckAfter {
			continue
		}
		nonce := repairNonce + strconv.FormatInt(run.Version, 10) + ":" + strconv.FormatInt(window, 10)
		if err := d.wake(ctx, run.ID, nonce); err != nil {
			errs = append(errs, err)
			continue
		}
		woken++
		d.log().Info("waking stuck workflow run", "run_id", run.ID, "workflow_id", run.WorkflowID,
			"evaluations", run.Evaluations, "idle", now.Sub(run.UpdatedAt).Round(time.Second))
	}
	return woken, errors.Join(errs...)
}

// DrainDLQ ends, FAILED "poison: …", every run whose wake-up the workflow
// queue dead-lettered (its evaluations kept failing: the isolate could not
// be started, the store refused), wakes the tool call waiting for it, and
// deletes the dead message — a dead letter becomes a visible state rather
// than rotting. A dead-lettered schedule firing is logged and dropped.
func (d *Driver) DrainDLQ(ctx context.Context) (int, error) {
	q, dlq := d.Engine.Queue, contracts.DLQ(contracts.QueueWorkflow)
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
				d.log().Error("schedule firing dead-lettered: dropped", "schedule_id", m.ScheduleID, "scheduled_at", m.ScheduledAt, "receives", dl.ReceiveCount)
			default:
				run, err := d.Store.GetRun(ctx, m.SubmissionID)
				if err != nil && !errors.Is(err, contracts.ErrNotFound) {
					return failed, fmt.Errorf("reading run %s: %w", m.SubmissionID, err)
				}
				if err == nil && run.Status == contracts.RunRunning {
					reason := fmt.Sprintf("poison: the run's wake-up was dead-lettered after %d deliveries (its evaluation kept failing; see the workflow function's log)", dl.ReceiveCount)
					if err := d.finish(ctx, run, contracts.RunFailed, nil, reason); err != nil {
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
