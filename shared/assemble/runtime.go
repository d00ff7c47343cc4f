// Package runtime is cairn's construction seam: Assemble wires a backend's
// ports into the turn engine, the repairer, the queue workers and the HTTP
// API. Backends only make ports — `backend.New` (SQLite, local sandboxes)
// for `cairn dev`/`cairn run`, and the AWS backend (DynamoDB, SQS) for the
// Lambda functions — so a Lambda binary never links the embedded adapters.
//
// # Usage
//
//	rt, err := assemble.New(ports, assemble.Config{Owner: "boot-1", Token: tok})
//	go rt.Serve(ctx)                       // workers + repair ticker
//	http.ListenAndServe(addr, rt.API)
package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/api"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/repair"
	"github.com/cairnrun/cairn/shared/turn"
	"github.com/cairnrun/cairn/shared/worker"
	"github.com/cairnrun/cairn/shared/workflow"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

// Ports are what a backend provides. Plain fields: a test swaps one.
type Ports struct {
	Journal    contracts.JournalStore
	Transcript contracts.TranscriptStore
	Streams    contracts.StreamStore
	Events     contracts.EventLog
	Queue      contracts.Queue
	Sandboxes  contracts.SandboxProvider
	Registry   contracts.ToolRegistry
	// Models maps a provider name ("scripted", …) to its client.
	Models map[string]contracts.ModelClient
	Clock  contracts.Clock
	IDs    contracts.IDs
	// Workflows and Evaluator serve workflows (both or neither): the store
	// of workflows, runs and nodes, and where scripts are evaluated (an
	// isolate process or function, never this process).
	Workflows contracts.WorkflowStore
	Evaluator contracts.Evaluator
	// Close releases the backend (database handles, locks).
	Close func() error
}

// Config tunes the assembly; zero values take the documented defaults.
type Config struct {
	Owner        string        // lease owner id of this process (required)
	Token        string        // API bearer token; empty = no token check (IAM in front)
	DefaultModel string        // for sessions that name none; default "scripted:plain"
	LeaseTTL     time.Duration // default turn.DefaultLeaseTTL
	StuckAfter   time.Duration // repair threshold (submissions and workflow runs); default 60s
	RepairEvery  time.Duration // repair ticker in Serve; default 5s
	MaxAttempts  int
	Concurrency  int // workers per queue in Serve; default 2
	Log          *slog.Logger
	// Scheduler registers workflow schedules where they fire (EventBridge
	// Scheduler on AWS); nil = the store is the schedule (the dev ticker).
	Scheduler api.Scheduler
}

// Runtime is an assembled cairn.
type Runtime struct {
	Ports
	Config
	Engine  *turn.Engine
	Driver  *workflow.Driver // nil without workflows
	Repair  *repair.Repairer
	Workers *worker.Pool
	API     http.Handler
	// QueueSignals fire on every Send to their queue; EventSignal on every
	// event append.
	QueueSignals *worker.Signals
	EventSignal  *worker.Signal
}

// Assemble builds the runtime from a backend's ports.
func New(p Ports, cfg Config) (*Runtime, error) {
	if p.Journal == nil || p.Transcript == nil || p.Streams == nil || p.Events == nil || p.Queue == nil ||
		p.Sandboxes == nil || p.Registry == nil || p.Clock == nil || p.IDs == nil {
		return nil, errors.New("assembling runtime: a port is missing")
	}
	if cfg.Owner == "" {
		return nil, errors.New("assembling runtime: Config.Owner is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = "scripted:plain"
	}
	rt := &Runtime{Ports: p, Config: cfg, QueueSignals: &worker.Signals{}, EventSignal: &worker.Signal{}}
	q := worker.NotifyQueue{Queue: p.Queue, Signals: rt.QueueSignals}
	ev := worker.NotifyEvents{EventLog: p.Events, Signal: rt.EventSignal}
	rt.Engine = &turn.Engine{Deps: turn.Deps{
		Journal: p.Journal, Transcript: p.Transcript, Streams: p.Streams, Events: ev, Queue: q,
		Models: rt.resolve, Registry: p.Registry, Sandboxes: p.Sandboxes, Clock: p.Clock, IDs: p.IDs,
		Log: cfg.Log, Owner: cfg.Owner, LeaseTTL: cfg.LeaseTTL, MaxAttempts: cfg.MaxAttempts,
	}}
	queues := []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit}
	if (p.Workflows == nil) != (p.Evaluator == nil) {
		return nil, errors.New("assembling runtime: Workflows and Evaluator come together")
	}
	if p.Workflows != nil {
		rt.Driver = &workflow.Driver{Store: p.Workflows, Engine: rt.Engine, Eval: p.Evaluator, DefaultModel: cfg.DefaultModel, Log: cfg.Log}
		rt.Engine.Workflows, rt.Engine.Ending = rt.Driver, rt.Driver.Ending
		queues = append(queues, contracts.QueueWorkflow)
	}
	rt.Repair = &repair.Repairer{Engine: rt.Engine, StuckAfter: cfg.StuckAfter}
	rt.Workers = &worker.Pool{
		Queue: q, Handle: rt.Handle, Concurrency: cfg.Concurrency, Wake: rt.QueueSignals.Wait, Log: cfg.Log,
		Queues: queues,
	}
	rt.API = api.New(api.Config{
		Engine: rt.Engine, Journal: p.Journal, Transcript: p.Transcript, Events: ev, Registry: p.Registry,
		Wake: rt.EventSignal.Wait, Token: cfg.Token, DefaultModel: cfg.DefaultModel, Log: cfg.Log,
		Workflow: rt.workflowAPI(),
	})
	return rt, nil
}

// Handle dispatches a message of any queue: workflow wake-ups to the
// driver, phase messages to the engine.
func (rt *Runtime) Handle(ctx context.Context, m contracts.Message) error {
	if m.Kind == contracts.QueueWorkflow {
		if rt.Driver == nil {
			rt.Log.Warn("workflow message without workflows configured: dropped", "run_id", m.SubmissionID)
			return nil
		}
		return rt.Driver.Handle(ctx, m)
	}
	return rt.Engine.Handle(ctx, m)
}

// resolve maps "provider:model" to a client; a bare name means scripted.
func (rt *Runtime) resolve(model string) (contracts.ModelClient, string, error) {
	provider, name, ok := strings.Cut(model, ":")
	if !ok {
		return nil, "", fmt.Errorf("model %q: want provider:model (e.g. scripted:demo): %w", model, contracts.ErrInvalid)
	}
	c, found := rt.Models[provider]
	if !found {
		return nil, "", fmt.Errorf("model provider %q is not configured: %w", provider, contracts.ErrInvalid)
	}
	return c, name, nil
}

// Serve runs the queue workers, the repair ticker and (with workflows and
// no external scheduler) the schedule ticker until ctx ends.
func (rt *Runtime) Serve(ctx context.Context) {
	every := rt.RepairEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	go rt.RepairLoop(ctx, every)
	go rt.ScheduleLoop(ctx, every)
	rt.Workers.Run(ctx)
}

// RepairLoop runs a repair pass (RepairAll) every period until ctx ends,
// logging what each pass did (the repair function's schedule, in process).
func (rt *Runtime) RepairLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rep, err := rt.RepairAll(ctx)
			if err != nil && ctx.Err() == nil {
				rt.Log.Warn("repair pass", "error", err)
			}
			if rep.Redriven+rep.Started+rep.Failed+rep.Expired+rep.Poison+rep.RunsWoken+rep.RunsPoisoned > 0 {
				rt.Log.Info("repair pass", "redriven", rep.Redriven, "started", rep.Started, "failed", rep.Failed,
					"expired", rep.Expired, "poison", rep.Poison, "runs_woken", rep.RunsWoken, "runs_poisoned", rep.RunsPoisoned)
			}
		}
	}
}

// RepairReport is what one RepairAll pass did: the submission repair's
// counts and the workflow runs the sweep woke.
type RepairReport struct {
	repair.Report
	RunsWoken    int // stuck RUNNING runs woken
	RunsPoisoned int // runs ended FAILED poison:… from the workflow DLQ
}

// RepairAll makes one repair pass (the repair function's handler): stuck
// submissions and dead letters (Repair.Run), then, with workflows, stuck
// workflow runs (Driver.Repair, with the same StuckAfter) and dead-lettered
// run wake-ups (Driver.DrainDLQ: the run ends FAILED poison:…). The run
// passes run even when the submission pass failed; errors are joined.
func (rt *Runtime) RepairAll(ctx context.Context) (RepairReport, error) {
	rep, err := rt.Repair.Run(ctx)
	out := RepairReport{Report: rep}
	if rt.Driver == nil {
		return out, err
	}
	stuck := rt.StuckAfter
	if stuck <= 0 {
		stuck = workflow.DefaultStuckAfter
	}
	woken, werr := rt.Driver.Repair(ctx, stuck)
	poisoned, derr := rt.Driver.DrainDLQ(ctx)
	out.RunsWoken, out.RunsPoisoned = woken, poisoned
	return out, errors.Join(err, werr, derr)
}

// Close releases the backend.
func (rt *Runtime) Close() error {
	if rt.Ports.Close == nil {
		return nil
	}
	return rt.Ports.Close()
}

// workflowAPI is the API's view of workflows (nothing without them).
func (rt *Runtime) workflowAPI() api.WorkflowConfig {
	if rt.Driver == nil {
		return api.WorkflowConfig{}
	}
	return api.WorkflowConfig{
		Store: rt.Workflows, Runs: rt.Driver, IDs: rt.IDs, Scheduler: rt.Scheduler,
		CheckScript: script.Check,
		CheckSchedule: func(expr string) error {
			_, err := schedule.Parse(expr)
			return err
		},
	}
}

// ScheduleLoop fires the store's schedules from this process (the local
// stand-in for EventBridge Scheduler) until ctx ends; without workflows,
// or with an external scheduler, it returns at once.
func (rt *Runtime) ScheduleLoop(ctx context.Context, every time.Duration) {
	if rt.Driver == nil || rt.Scheduler != nil {
		return
	}
	t := &schedule.Ticker{List: rt.Workflows.ListSchedules, Fire: rt.Driver.Fire, Clock: rt.Clock, Log: rt.Log}
	if err := t.Run(ctx, every); err != nil && ctx.Err() == nil {
		rt.Log.Error("schedule ticker stopped", "error", err)
	}
}
