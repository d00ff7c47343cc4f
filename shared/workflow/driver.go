package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/telemetry"
	"github.com/cairnrun/cairn/shared/turn"
)

// RepairNonce prefixes the nonce of the repair pass's wake-ups: their
// evaluation runs even when no new node result arrived since the last one
// (see evaluate), so a run whose progress was lost moves again.
const RepairNonce = "repair:"

// DefaultMaxEvaluations bounds a run's evaluations (each is one wake-up).
const DefaultMaxEvaluations = 10_000

// Driver runs workflows on the engine's ports.
type Driver struct {
	Store  contracts.WorkflowStore
	Engine *turn.Engine // sessions, submissions, queue, registry, clock
	Eval   contracts.Evaluator
	// DefaultModel is a node's model when its spec names none.
	DefaultModel   string
	MaxSteps       uint64 // Starlark steps per evaluation; 0 = the evaluator's default
	MaxEvaluations int
	// Starts is how many nodes an evaluation starts at once (each start is
	// a few conditional writes and a send: on DynamoDB they are round
	// trips worth overlapping); ≤ 0 is 1.
	Starts int
	// StartReserve is the time before a handler's deadline in which an
	// evaluation starts no further node (starts.go); 0 is
	// DefaultStartReserve.
	StartReserve time.Duration
	Log          *slog.Logger
}

func (d *Driver) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

func (d *Driver) now() time.Time { return d.Engine.Clock.Now() }

// Start creates run if absent (a repeat returns the existing run) and wakes
// it. StartedAt (the script's now()) defaults to the clock. A run started
// by a tool call (Parent) without an Owner is the calling session's
// owner's, so the run and its nodes' sessions are seen by whoever sees
// the session.
//
// The run is a trace of its own (trace.go): its start span's traceparent is
// stored on the run (Trace).
func (d *Driver) Start(ctx context.Context, run contracts.WorkflowRun) (_ contracts.WorkflowRun, err error) {
	if run.ID == "" || run.WorkflowID == "" {
		return run, fmt.Errorf("starting run: empty id: %w", contracts.ErrInvalid)
	}
	ctx, span := startSpan(ctx, run)
	defer func() {
		telemetry.Fail(span, err)
		span.End()
	}()
	run.Trace = telemetry.Inject(ctx)
	if run.Owner == "" && run.Parent != nil {
		sess, err := d.Engine.Journal.GetSession(ctx, run.Parent.SessionID)
		if err != nil {
			return run, fmt.Errorf("starting run %s: reading the session of its tool call: %w", run.ID, err)
		}
		run.Owner = sess.Owner
	}
	if run.StartedAt.IsZero() {
		run.StartedAt = d.now()
	}
	run.Status, run.UpdatedAt = contracts.RunRunning, d.now()
	span.SetAttributes(attribute.String("cairn.principal", run.Owner))
	got, created, err := d.Store.CreateRun(ctx, run)
	if err != nil {
		return got, fmt.Errorf("starting run %s: %w", run.ID, err)
	}
	span.SetAttributes(attribute.Bool("cairn.workflow.created", created)) // a repeat: the run's trace is the first start's
	if created {
		d.log().InfoContext(ctx, "workflow run started", "run_id", got.ID, "workflow_id", got.WorkflowID)
	}
	if got.Status.Terminal() {
		return got, nil
	}
	return got, d.wake(ctx, got.ID, "start")
}

// StartRun implements contracts.WorkflowStarter for the run_workflow tool.
func (d *Driver) StartRun(ctx context.Context, run contracts.WorkflowRun) (contracts.WorkflowRun, error) {
	return d.Start(ctx, run)
}

// GetRun implements contracts.WorkflowStarter.
func (d *Driver) GetRun(ctx context.Context, id string) (contracts.WorkflowRun, error) {
	return d.Store.GetRun(ctx, id)
}

// Wake sends run runID a wake-up with the given nonce (the repair pass's
// start with RepairNonce).
func (d *Driver) Wake(ctx context.Context, runID, nonce string) error {
	return d.wake(ctx, runID, nonce)
}

// WakeKey is the coalescing key of a workflow queue message
// (lambdafn.Coalesce): a run's wake-ups of one kind share it — repair's
// apart, as they evaluate even when nothing is new — and a schedule's
// firing has none (each firing is a run of its own).
func WakeKey(m contracts.Message) string {
	if m.ScheduleID != "" || m.Kind != contracts.QueueWorkflow {
		return ""
	}
	if strings.HasPrefix(m.Nonce, RepairNonce) {
		return "repair|" + m.SubmissionID
	}
	return "wake|" + m.SubmissionID
}

// Fail ends a RUNNING run FAILED with reason and wakes the tool call
// waiting for it; a run another evaluation ended first is left as it is.
func (d *Driver) Fail(ctx context.Context, run contracts.WorkflowRun, reason string) error {
	return d.finish(ctx, run, contracts.RunFailed, nil, reason)
}

// wake sends the run a wake-up; the nonce names why, so duplicate wakes of
// one cause collapse in the FIFO dedup window.
// It carries ctx's span (trace.go).
func (d *Driver) wake(ctx context.Context, runID, why string) error {
	m := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: runID, SubmissionID: runID, Nonce: why, Trace: telemetry.Inject(ctx)}
	if err := d.Engine.Queue.Send(ctx, contracts.QueueWorkflow, m); err != nil {
		return fmt.Errorf("waking run %s: %w", runID, err)
	}
	return nil
}

// Handle is the workflow queue's handler: a schedule firing starts its run;
// a wake-up evaluates the run once, a span in the run's trace (trace.go).
func (d *Driver) Handle(ctx context.Context, m contracts.Message) (err error) {
	if m.ScheduleID != "" {
		return d.fire(ctx, m.ScheduleID, m.ScheduledAt)
	}
	run, err := d.Store.GetRun(ctx, m.SubmissionID)
	if errors.Is(err, contracts.ErrNotFound) {
		d.log().WarnContext(ctx, "wake-up for unknown run", "run_id", m.SubmissionID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading run %s: %w", m.SubmissionID, err)
	}
	ctx, span := evalSpan(ctx, run, m)
	defer func() {
		telemetry.Fail(span, err)
		span.End()
	}()
	if run.Status.Terminal() {
		return d.notifyParent(ctx, run) // a repeat: make sure the waiting call heard
	}
	if run.Cancel != nil {
		_, err := d.finishCancel(ctx, run)
		return err
	}
	return d.evaluate(ctx, run, strings.HasPrefix(m.Nonce, RepairNonce))
}

// Fire starts the run of schedule s at its scheduled time (the local
// ticker's and EventBridge's firing): the run id derives from both, so a
// duplicate firing is the same run. The schedule is read again from the
// store first: one paused or deleted since the caller listed it starts
// nothing, and the firing is dropped (nil), not retried.
func (d *Driver) Fire(ctx context.Context, s contracts.Schedule, at time.Time) error {
	return d.fire(ctx, s.ID, at)
}

// fire starts the run of stored schedule scheduleID at at, unless the
// store has it paused or no longer has it. The store is the truth:
// EventBridge may still fire a schedule whose pause or delete died between
// its Scheduler write and its store write, or deliver a firing late (see
// contracts.Scheduler for the order of those writes).
func (d *Driver) fire(ctx context.Context, scheduleID string, at time.Time) error {
	if at.IsZero() {
		d.log().WarnContext(ctx, "schedule firing without a time: dropped", "schedule_id", scheduleID)
		return nil
	}
	s, err := d.Store.GetSchedule(ctx, scheduleID)
	if errors.Is(err, contracts.ErrNotFound) {
		d.log().WarnContext(ctx, "firing of unknown or deleted schedule: dropped", "schedule_id", scheduleID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("firing schedule %s: %w", scheduleID, err)
	}
	if s.Paused {
		d.log().InfoContext(ctx, "firing of paused schedule: dropped", "schedule_id", scheduleID, "scheduled_at", at)
		return nil
	}
	run := contracts.WorkflowRun{ID: ids.ScheduledRun(s.ID, at), ScheduleID: s.ID, ScheduledAt: at.UTC(), Input: s.Input, Owner: s.Owner, StartedAt: at.UTC()}
	wf, err := d.Store.GetWorkflow(ctx, s.WorkflowID)
	if err != nil {
		return fmt.Errorf("firing schedule %s: %w", s.ID, err)
	}
	run.WorkflowID, run.WorkflowName, run.Script = wf.ID, wf.Name, wf.Script
	_, err = d.Start(ctx, run)
	return err
}

// evaluate runs the script once against the known results and acts on
// the outcome: start pending nodes, or end the run. A wake-up that brings
// no new result is skipped — unless it is the repair sweep's (repair): then
// the run may be stuck with a node never started, so it evaluates anyway
// (re-starting pending nodes is create-if-absent) and touches UpdatedAt,
// without spending one of the run's MaxEvaluations.
func (d *Driver) evaluate(ctx context.Context, run contracts.WorkflowRun, repair bool) error {
	maxEval := d.MaxEvaluations
	if maxEval <= 0 {
		maxEval = DefaultMaxEvaluations
	}
	if run.Evaluations >= maxEval {
		return d.finish(ctx, run, contracts.RunFailed, nil, fmt.Sprintf("evaluations_exhausted: %d evaluations", run.Evaluations))
	}
	results, unresolved, err := d.results(ctx, run.ID, repair)
	if err != nil {
		return err
	}
	stale := run.Evaluations > 0 && len(results) == run.ResultsSeen && !run.Starting
	counted(ctx, attribute.Int("cairn.workflow.nodes.done", len(results)), attribute.Int("cairn.workflow.nodes.running", unresolved),
		attribute.Bool("cairn.workflow.stale", stale))
	if stale && !repair {
		return nil // nothing new since the last evaluation: its nodes still run
	}
	resp, err := d.Eval.Evaluate(ctx, contracts.EvalRequest{
		Script: run.Script, Input: run.Input, RunID: run.ID, Now: run.StartedAt, Results: results, MaxSteps: d.MaxSteps,
	})
	if err != nil {
		return fmt.Errorf("evaluating run %s: %w", run.ID, err)
	}
	counted(ctx, attribute.String("cairn.workflow.eval_status", string(resp.Status)), attribute.Int("cairn.workflow.nodes.pending", len(resp.Pending)))
	switch resp.Status {
	case contracts.EvalDone:
		return d.finish(ctx, run, contracts.RunSucceeded, resp.Value, "")
	case contracts.EvalFailed:
		return d.finish(ctx, run, contracts.RunFailed, nil, "script_failed: "+resp.Error)
	case contracts.EvalPending:
		from := run.StartedBelow // the nodes below were started by an earlier evaluation
		if repair {
			from = 0 // a repair starts every pending node again: create-if-absent
		}
		below, more, err := d.startNodes(ctx, run, resp.Pending, from)
		if err != nil {
			return err
		}
		next := run
		if next.Trace == "" { // a run started with tracing off: its trace starts here
			next.Trace = telemetry.Inject(ctx)
		}
		if !stale {
			next.Evaluations++
		}
		next.ResultsSeen = len(results)
		next.StartedBelow = max(run.StartedBelow, below)
		next.Starting = more
		next.UpdatedAt = d.now()
		_, err = d.Store.UpdateRun(ctx, next, run.Version)
		if more {
			// Near the deadline with nodes still to start: the next
			// wake-up goes on (Starting makes it evaluate).
			if err := d.wake(ctx, run.ID, fmt.Sprintf("starts:%d", run.Version)); err != nil {
				return err
			}
		}
		if errors.Is(err, contracts.ErrConflict) {
			// A cancel asked meanwhile may have missed the nodes just
			// started: sweep them now.
			return d.sweepIfCancelled(ctx, run.ID)
		}
		if err != nil {
			return fmt.Errorf("recording evaluation of run %s: %w", run.ID, err)
		}
		return nil
	}
	return d.finish(ctx, run, contracts.RunFailed, nil, fmt.Sprintf("isolate_error: unknown evaluation status %q", resp.Status))
}

// finish ends the run (a conditional write: a lost race means another
// evaluation ended it) and wakes the waiting tool call.
func (d *Driver) finish(ctx context.Context, run contracts.WorkflowRun, status contracts.RunStatus, value json.RawMessage, reason string) error {
	next := run
	next.Status, next.Result, next.Error, next.UpdatedAt = status, value, reason, d.now()
	next.Evaluations++
	done, err := d.Store.UpdateRun(ctx, next, run.Version)
	if errors.Is(err, contracts.ErrConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ending run %s: %w", run.ID, err)
	}
	d.log().InfoContext(ctx, "workflow run ended", "run_id", done.ID, "status", done.Status, "error", done.Error)
	return d.notifyParent(ctx, done)
}

// notifyParent wakes the submission whose run_workflow call waits for run.
func (d *Driver) notifyParent(ctx context.Context, run contracts.WorkflowRun) error {
	p := run.Parent
	if p == nil {
		return nil
	}
	sub, err := d.Engine.Journal.GetSubmission(ctx, p.SubmissionID)
	if err != nil {
		return fmt.Errorf("reading the submission waiting for run %s: %w", run.ID, err)
	}
	if sub.Phase != contracts.PhaseTools || sub.Step != p.Step {
		return nil // it moved on already
	}
	return d.Engine.Enqueue(ctx, contracts.QueueTools, sub, "run:"+run.ID)
}
