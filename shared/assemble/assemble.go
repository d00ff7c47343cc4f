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
	"github.com/cairnrun/cairn/shared/pricing"
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
	// MCP lists and calls the tools of sessions' MCP servers (nil: not
	// served; a spec naming a server is refused).
	MCP contracts.MCPConnector
	// Models maps a provider name ("scripted", …) to its client.
	Models map[string]contracts.ModelClient
	Clock  contracts.Clock
	IDs    contracts.IDs
	// Workflows and Evaluator serve workflows (both or neither): the store
	// of workflows, runs and nodes, and where scripts are evaluated (an
	// isolate process or function, never this process).
	Workflows contracts.WorkflowStore
	Evaluator contracts.Evaluator
	// Batch, when the stores can, makes several of their calls one atomic
	// write (the embedded SQLite store); nil = call by call (AWS).
	Batch contracts.Batcher
	// Close releases the backend (database handles, locks).
	Close func() error
}

// Config tunes the assembly; zero values take the documented defaults.
type Config struct {
	Owner string // lease owner id of this process (required)
	// Authenticate finds the principal of an API request (api.Config);
	// nil = the API refuses every request.
	Authenticate func(*http.Request) (contracts.Principal, error)
	DefaultModel string        // for sessions that name none; default "scripted:plain"
	LeaseTTL     time.Duration // default turn.DefaultLeaseTTL
	FlushEvery   time.Duration // how often streamed text is written; default turn.FlushEvery
	FlushBytes   int           // most text one text_delta carries; 0 = unbounded (turn.Deps.FlushBytes)
	StuckAfter   time.Duration // repair threshold (submissions and workflow runs); default repair.DefaultStuckAfter (30 s) for submissions, DefaultRunStuckAfter (60 s) for runs
	RepairEvery  time.Duration // repair ticker in Serve; default 5s
	MaxAttempts  int
	Concurrency  int // workers per queue in Serve; default 2
	// WorkflowStarts is how many nodes an evaluation starts at once
	// (workflow.Driver.Starts); default 1.
	WorkflowStarts int
	Log            *slog.Logger
	// Scheduler registers workflow schedules where they fire (EventBridge
	// Scheduler on AWS); nil = the store is the schedule (the dev ticker).
	Scheduler contracts.Scheduler
	// MCPServer serves the API's /v1/mcp (serve.Handler); nil = not served.
	MCPServer api.MCPHandler
	// Console serves the web console at /console/ (console.Mount); nil =
	// not served (only the api function and cairn dev serve it).
	Console api.ConsoleFunc
	// Prices estimate turns' costs (nil: the repository's table).
	Prices *pricing.Table
	// Meter, when set, starts the orchestration tally (shared/meter) of a
	// handler run — of message m, or of an API request when m is nil — and
	// returns its context (the engine's Meter, the API's wrapper); nil =
	// nothing metered (embedded).
	Meter func(ctx context.Context, m *contracts.Message) context.Context
}

// Runtime is an assembled cairn: the ports and configuration it was built
// from, and what New made of them.
type Runtime struct {
	Ports   Ports
	Config  Config
	Engine  *turn.Engine
	Driver  *workflow.Driver // nil without workflows
	Repair  *repair.Repairer // one pass: submissions, and workflow runs with a Driver
	Workers *worker.Pool
	API     http.Handler
	// QueueSignals fire on every Send to their queue; EventSignal on every
	// event append; SubmissionSignals on an append to that submission.
	QueueSignals      *worker.Signals
	EventSignal       *worker.Signal
	SubmissionSignals *worker.KeyedSignal
}

// New builds the runtime from a backend's ports.
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
	rt := &Runtime{Ports: p, Config: cfg, QueueSignals: &worker.Signals{}, EventSignal: &worker.Signal{}, SubmissionSignals: &worker.KeyedSignal{}}
	q := worker.NotifyQueue{Queue: p.Queue, Signals: rt.QueueSignals}
	ev := worker.NotifyEvents{EventLog: p.Events, Signal: rt.EventSignal, Submissions: rt.SubmissionSignals}
	var batch contracts.Batcher
	if p.Batch != nil {
		batch = worker.DeferredBatcher{Batcher: p.Batch}
	}
	rt.Engine = &turn.Engine{Deps: turn.Deps{
		Journal: p.Journal, Transcript: p.Transcript, Streams: p.Streams, Events: ev, Queue: q, Batch: batch, Ack: worker.Ack, Chain: worker.Chainer{},
		Models: rt.resolve, Registry: p.Registry, MCP: p.MCP, Prices: cfg.Prices, Sandboxes: p.Sandboxes, Clock: p.Clock, IDs: p.IDs,
		Log: cfg.Log, Owner: cfg.Owner, LeaseTTL: cfg.LeaseTTL, FlushEvery: cfg.FlushEvery, FlushBytes: cfg.FlushBytes, MaxAttempts: cfg.MaxAttempts,
	}}
	if cfg.Meter != nil {
		rt.Engine.Meter = cfg.Meter
	}
	queues := []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit}
	if (p.Workflows == nil) != (p.Evaluator == nil) {
		return nil, errors.New("assembling runtime: Workflows and Evaluator come together")
	}
	if p.Workflows != nil {
		rt.Driver = &workflow.Driver{Store: p.Workflows, Engine: rt.Engine, Eval: p.Evaluator, DefaultModel: cfg.DefaultModel, Starts: cfg.WorkflowStarts, Log: cfg.Log}
		rt.Engine.Workflows, rt.Engine.Ending = rt.Driver, rt.Driver.Ending
		queues = append(queues, contracts.QueueWorkflow)
	}
	rt.Repair = &repair.Repairer{Engine: rt.Engine, Driver: rt.Driver, StuckAfter: cfg.StuckAfter}
	rt.Workers = &worker.Pool{
		Queue: q, Handle: rt.Handle, Concurrency: cfg.Concurrency, Wake: rt.QueueSignals.Wait, Log: cfg.Log,
		Chain:  []string{contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit}, // a turn's phases, not workflow wake-ups (they coalesce)
		Queues: queues,
	}
	rt.Engine.Chain = worker.Chainer{Pool: rt.Workers} // an accept's first phase goes to the running pool (Chainer.Origin)
	rt.API = api.New(api.Config{
		Engine: rt.Engine, Journal: p.Journal, Transcript: p.Transcript, Events: ev, Registry: p.Registry,
		Wake: rt.EventSignal.Wait, WakeFor: rt.SubmissionSignals.Wait, Authenticate: cfg.Authenticate, DefaultModel: cfg.DefaultModel, Log: cfg.Log,
		Workflow: rt.workflowAPI(), MCP: cfg.MCPServer,
		Console: rt.console(),
	})
	if cfg.Meter != nil {
		h := rt.API
		rt.API = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(cfg.Meter(r.Context(), nil)))
		})
	}
	return rt, nil
}

// console is the API's Config.Console: Config.Console with the runtime's
// log and clock.
func (rt *Runtime) console() func(http.Handler) http.Handler {
	if rt.Config.Console == nil {
		return nil
	}
	return func(self http.Handler) http.Handler {
		return rt.Config.Console(self, rt.Config.Log, rt.Engine.Clock.Now)
	}
}

// Handle dispatches a message of any queue: workflow wake-ups to the
// driver, phase messages to the engine.
func (rt *Runtime) Handle(ctx context.Context, m contracts.Message) error {
	if m.Kind == contracts.QueueWorkflow {
		if rt.Driver == nil {
			rt.Config.Log.WarnContext(ctx, "workflow message without workflows configured: dropped", "run_id", m.SubmissionID)
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
	c, found := rt.Ports.Models[provider]
	if !found {
		return nil, "", fmt.Errorf("model provider %q is not configured: %w", provider, contracts.ErrInvalid)
	}
	return c, name, nil
}

// Serve runs the queue workers, the repair ticker and (with workflows and
// no external scheduler) the schedule ticker until ctx ends.
func (rt *Runtime) Serve(ctx context.Context) {
	every := rt.Config.RepairEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	go rt.Repair.Loop(ctx, every)
	go rt.ScheduleLoop(ctx, every)
	rt.Workers.Run(ctx)
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
		Store: rt.Ports.Workflows, Runs: rt.Driver, IDs: rt.Ports.IDs, Scheduler: rt.Config.Scheduler,
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
	if rt.Driver == nil || rt.Config.Scheduler != nil {
		return
	}
	t := &schedule.Ticker{List: rt.Ports.Workflows.ListSchedules, Fire: rt.Driver.Fire, Clock: rt.Ports.Clock, Log: rt.Config.Log}
	if err := t.Run(ctx, every); err != nil && ctx.Err() == nil {
		rt.Config.Log.ErrorContext(ctx, "schedule ticker stopped", "error", err)
	}
}
