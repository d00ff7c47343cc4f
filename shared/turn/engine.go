package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/meter"
	"github.com/cairnrun/cairn/shared/pricing"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// Defaults applied when a session leaves a limit at zero.
const (
	DefaultMaxSteps       = 50
	DefaultMaxTokens      = 1_000_000
	DefaultMaxWallSeconds = 3600
	DefaultLeaseTTL       = 30 * time.Second // renewed every TTL/3 while the holder works
	DefaultMaxAttempts    = 5
	DefaultApprovalWait   = 24 * time.Hour
	MaxPromptBytes        = 256 << 10
)

// ModelResolver returns the client for a session's "provider:model" string
// and the model name to send to it. Unknown providers → ErrInvalid.
type ModelResolver func(model string) (contracts.ModelClient, string, error)

// Deps are the ports a handler may use. Plain fields: a test swaps one.
type Deps struct {
	Journal    contracts.JournalStore
	Transcript contracts.TranscriptStore
	Streams    contracts.StreamStore
	Events     contracts.EventLog
	Queue      contracts.Queue
	// Batch, when set, makes a phase's closing writes one atomic write
	// (its work products, the advance, the next phase's send); nil = one
	// write each, in the same order (the crash rules hold either way).
	Batch contracts.Batcher
	// Ack, when set, consumes the queue message a handler runs for inside
	// its closing batch (worker.Ack: the embedded queue is the same
	// database), so the advance, the next send and the delete are one
	// write; nil = the caller deletes (Lambda's event source mapping).
	Ack func(ctx context.Context) error
	// Chain, when set, tells a closing write whether the next phase's
	// message was handed to this process's worker (worker.Chainer): then
	// that phase's lease is taken in the same write and handed on, one
	// write fewer for it. nil = every phase takes its own lease.
	Chain    Chainer
	Models   ModelResolver
	Registry contracts.ToolRegistry
	// MCP lists and calls the tools of sessions' MCP servers; nil = MCP
	// servers are not served (a spec naming one is refused).
	MCP       contracts.MCPConnector
	Sandboxes contracts.SandboxProvider
	// Workflows is given to tools (run_workflow); nil = not served.
	Workflows contracts.WorkflowStarter
	// Ending, when set, is told of every submission about to end (its
	// terminal record, Phase set) before the end is written; an error
	// retries the handler, so it must be idempotent. Workflows use it to
	// record a node's result and wake its run.
	Ending func(ctx context.Context, sub contracts.Submission) error
	// Meter, when set, starts each handler run's orchestration tally
	// (shared/meter; the AWS backend's) from the message's carried usage;
	// the run's messages carry it on, and the turn's terminal write
	// records it. nil = nothing metered.
	Meter func(ctx context.Context, m *contracts.Message) context.Context
	Clock contracts.Clock
	IDs   contracts.IDs
	Log   *slog.Logger

	Owner    string        // lease owner id of this process; each handler run leases as Owner/<random>
	LeaseTTL time.Duration // 0 = DefaultLeaseTTL; renewed every LeaseTTL/3 while a handler works
	// Heartbeat, when set, replaces the ticker a lease holder renews on
	// (every is LeaseTTL/3): tests drive renewals by hand.
	Heartbeat func(every time.Duration) (ticks <-chan time.Time, stop func())
	// WatchEvery is how often a lease holder reads its record to notice a
	// cancel or a lost lease between heartbeats; 0 = DefaultWatchEvery.
	WatchEvery time.Duration
	// FlushEvery is how often a streaming model's text is written (a
	// text_delta event per flush); 0 = FlushEvery (50 ms). Each flush is a
	// write: a store that prices writes (DynamoDB) flushes less often.
	FlushEvery time.Duration
	// FlushBytes, when > 0, bounds the text one text_delta event carries,
	// JSON-encoded (JSONTextLen): a text chunk that would take the buffered
	// text past it flushes what is buffered first (a single chunk larger
	// than the bound is one event of its own). A store that prices writes
	// by the KB (DynamoDB) keeps each event item under a unit this way.
	// 0 = unbounded.
	FlushBytes int
	// Prices estimate each turn's cost as its usage grows
	// (Submission.Cost); nil = the repository's table (pricing.Default).
	Prices *pricing.Table
	// StartedAfter is how long a read-only tool call runs before its
	// started marker is written; a quicker one's goes with its result. 0 =
	// DefaultStartedAfter.
	StartedAfter time.Duration
	// FuseWithin is how long a model phase may run its step's read-only,
	// allowed calls itself, to write their results with its own closing
	// write (fuse.go; where the store batches); 0 = DefaultFuseWithin,
	// < 0 = never: every step with calls goes to the tools phase.
	FuseWithin  time.Duration
	MaxAttempts int // per (step, phase); 0 = DefaultMaxAttempts
	OutputCap   int // tool output cap in bytes; 0 = tools default
}

// Chainer is the worker's side of a next phase run by the same worker
// (worker.Chainer).
type Chainer interface {
	Claims(ctx context.Context, queue string) bool // a send to queue from ctx's handler would run here next, unless its group has a message waiting
	Claimed(ctx context.Context) bool              // the send just made in ctx's batch runs here next
	// Handoff gives it the lease taken for it ("" none) and the record the
	// batch wrote (nil none), once the batch commits.
	Handoff(ctx context.Context, lease string, rec *contracts.Submission)
	// Carried is what the previous phase handed this delivery: the lease
	// it took ("" none) and the record it wrote (nil none), given once.
	Carried(ctx context.Context) (string, *contracts.Submission)
	// Origin readies ctx, outside any handler, for a batch whose send
	// the worker may claim as a handler's (an accept's begin), and returns
	// the function that gives the claimed message to the worker once the
	// batch ended.
	Origin(ctx context.Context) (context.Context, func())
}

// Engine runs the phase handlers.
type Engine struct {
	Deps

	paths   pathCache // the latest transcript path per session (paths.go)
	specs   specCache // the immutable part of recent sessions (specs.go)
	matched matchMemo // model → price-table entry (priceEntry)
	// pinning holds the sessions whose stdio MCP servers this process is
	// listing now (pinForModel): a second message for one of them — a
	// redelivery, a repair's re-drive — is put back instead of holding
	// another worker while the first waits for the server.
	pinning sync.Map
}

// Handle dispatches a queue message to its phase handler.
func (e *Engine) Handle(ctx context.Context, m contracts.Message) (err error) {
	// One span per handler run, a child of the span that sent the message
	// (the turn's trace, across processes and queues).
	ctx, span := telemetry.Tracer().Start(telemetry.Extract(ctx, m.Trace), "cairn.phase "+m.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("cairn.session_id", m.SessionID), attribute.String("cairn.submission_id", m.SubmissionID),
			attribute.Int("cairn.step", m.Step), attribute.String("cairn.phase", string(m.Phase)), attribute.String("cairn.queue", m.Kind)))
	ctx = context.WithValue(ctx, phaseKey{}, m.Kind)
	ctx = e.takeCarried(ctx)
	if e.Meter != nil {
		ctx = e.Meter(ctx, &m)
	}
	start := e.now()
	if !m.SentAt.IsZero() {
		telemetry.QueueAge.Record(ctx, ms(start.Sub(m.SentAt)), m.Kind)
	}
	defer func() {
		telemetry.Fail(span, err)
		span.End()
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		telemetry.PhaseDuration.Record(ctx, ms(e.now().Sub(start)), m.Kind, outcome)
	}()
	switch m.Kind {
	case contracts.QueueModel:
		return e.Model(ctx, m)
	case contracts.QueueTools:
		return e.Tools(ctx, m)
	case contracts.QueueCommit:
		return e.Commit(ctx, m)
	}
	e.log().WarnContext(ctx, "dropping message of unknown kind", "kind", m.Kind, "submission_id", m.SubmissionID)
	return nil
}

func (e *Engine) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

func (e *Engine) now() time.Time { return e.Clock.Now() }

var defaultPrices = pricing.Default()

// cost is the estimate of usage on the session's model.
func (e *Engine) cost(model string, u contracts.Usage) *contracts.Cost {
	t, entry, ok := e.priceEntry(model)
	if !ok {
		return nil
	}
	return t.CostOf(entry, u)
}

// priceEntry is the price table in use and model's entry in it
// (Table.Match), remembered per table: a step asks three times (its cost,
// its metrics' dimension), and a match is a glob against every pattern.
// The names remembered are bounded (a session names any model it likes).
func (e *Engine) priceEntry(model string) (*pricing.Table, string, bool) {
	t := &defaultPrices
	if e.Prices != nil {
		t = e.Prices
	}
	e.matched.mu.Lock()
	defer e.matched.mu.Unlock()
	if e.matched.table != t || len(e.matched.entries) >= maxMatched {
		e.matched.table, e.matched.entries = t, map[string]string{}
	}
	entry, seen := e.matched.entries[model]
	if !seen {
		entry, _ = t.Match(model)
		e.matched.entries[model] = entry
	}
	return t, entry, entry != ""
}

// maxMatched bounds the model names priceEntry remembers.
const maxMatched = 256

// matchMemo is priceEntry's memory: model → entry ("" none) of table.
type matchMemo struct {
	mu      sync.Mutex
	table   *pricing.Table
	entries map[string]string
}

// withModelCost is cur (the orchestration part, shared/meter) with the
// model part of model: nil when neither has anything.
func withModelCost(cur, model *contracts.Cost) *contracts.Cost {
	if cur == nil || cur.AWSPrices == "" {
		return model
	}
	out := *cur
	out.Model, out.Prices = 0, ""
	if model != nil {
		out.Model, out.Prices = model.Model, model.Prices
	}
	return &out
}

// invocation is the lease owner of one handler run: the process owner plus
// a random suffix, so two concurrent runs in one process (two deliveries of
// the same message) never mistake each other's lease for their own.
func (e *Engine) invocation() string {
	return e.Owner + "/" + ids.RandomHex(6)
}

// OwnedBy reports whether a lease owner string belongs to process owner.
func OwnedBy(leaseOwner, owner string) bool {
	return leaseOwner == owner || strings.HasPrefix(leaseOwner, owner+"/")
}

func (e *Engine) leaseTTL() time.Duration {
	if e.LeaseTTL <= 0 {
		return DefaultLeaseTTL
	}
	return e.LeaseTTL
}

func (e *Engine) maxAttempts() int {
	if e.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return e.MaxAttempts
}

// Enqueue sends the wake-up for sub's current phase to queue kind. A
// non-empty nonce marks a deliberate re-drive so deduplication keeps it.
func (e *Engine) Enqueue(ctx context.Context, kind string, sub contracts.Submission, nonce string) error {
	m := contracts.Message{Kind: kind, SessionID: sub.SessionID, SubmissionID: sub.ID, Step: sub.Step, Phase: sub.Phase, Version: sub.Version, Nonce: nonce,
		Trace: telemetry.Inject(ctx), SentAt: e.now(), Orchestration: meter.Carry(ctx, sub.ID)}
	if err := e.Queue.Send(ctx, kind, m); err != nil {
		return fmt.Errorf("enqueueing %s for submission %s: %w", kind, sub.ID, err)
	}
	return nil
}

// batch runs fn as one write where the stores allow it (Deps.Batch), else
// directly: every write fn makes is ordered and conditional as always, so a
// batch only removes the crash points between them.
func (e *Engine) batch(ctx context.Context, fn func(ctx context.Context) error) error {
	if e.Batch == nil {
		return fn(ctx)
	}
	if _, in := ctx.Value(wroteKey{}).(*wrote); in { // joins the batch it runs in
		return e.Batch.Batch(ctx, fn)
	}
	w := &wrote{}
	if err := e.Batch.Batch(context.WithValue(ctx, wroteKey{}, w), fn); err != nil {
		return err
	}
	e.paths.grow(w.kept) // committed: the nodes it wrote and advanced to extend the cached paths
	return nil
}

// ack consumes the message the handler runs for as part of the current
// batch (Deps.Ack); a failure leaves that to the caller.
func (e *Engine) ack(ctx context.Context) {
	if e.Ack == nil {
		return
	}
	if err := e.Ack(ctx); err != nil {
		e.log().DebugContext(ctx, "deleting the handled message in the closing batch; the worker will", "error", err)
	}
}

func (e *Engine) emit(ctx context.Context, ev contracts.Event) error {
	if ev.At.IsZero() {
		ev.At = e.now()
	}
	if err := e.Events.AppendEvents(ctx, ev); err != nil {
		return fmt.Errorf("appending %s event for submission %s: %w", ev.Type, ev.SubmissionID, err)
	}
	return nil
}

// load reads the submission a message points at; ok=false means the
// message is stale (unknown submission, or the journal moved past it).
func (e *Engine) load(ctx context.Context, m contracts.Message, phase contracts.Phase) (contracts.Submission, bool, error) {
	sub, err := e.submission(ctx, m.SubmissionID)
	if errors.Is(err, contracts.ErrNotFound) {
		e.log().WarnContext(ctx, "message for unknown submission", "submission_id", m.SubmissionID)
		return sub, false, nil
	}
	if err != nil {
		return sub, false, fmt.Errorf("reading submission %s: %w", m.SubmissionID, err)
	}
	if did, err := e.cancelled(ctx, sub); did || err != nil {
		return sub, false, err
	}
	if sub.Phase != phase || sub.Step != m.Step {
		return sub, false, nil
	}
	describe(ctx, sub)
	return sub, true, nil
}

// open is the common start of the model and tools phases: load the
// submission the message points at (ok=false: stale, nothing to do), get
// its session's immutable part (sessionSpec), and end the turn FAILED if a
// limit has tripped.
func (e *Engine) open(ctx context.Context, m contracts.Message, phase contracts.Phase) (contracts.Submission, contracts.Session, bool, error) {
	sub, ok, err := e.load(ctx, m, phase)
	if !ok || err != nil {
		return sub, contracts.Session{}, false, err
	}
	sess, err := e.sessionSpec(ctx, sub.SessionID) // the spec: a phase needs nothing of the session that changes
	if err != nil {
		return sub, sess, false, err
	}
	if which := tripped(sub, limitsFor(sess, sub), e.now()); which != "" {
		return sub, sess, false, e.Fail(ctx, sub, "limit_tripped:"+which)
	}
	return sub, sess, true, nil
}

// limitsFor is the limits a turn runs under: its own (a retry's raised
// limits) when it has them, else its session's.
func limitsFor(sess contracts.Session, sub contracts.Submission) contracts.Limits {
	if sub.Limits != nil {
		return *sub.Limits
	}
	return sess.Spec.Limits
}

// attempts is how many attempts of its (step, phase) sub has used since it
// was last resumed (a retry starts counting afresh, at AttemptFloor).
func attempts(sub contracts.Submission) int { return sub.Attempt - sub.AttemptFloor }

func limitsOf(l contracts.Limits) contracts.Limits {
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultMaxSteps
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = DefaultMaxTokens
	}
	if l.MaxWallSeconds <= 0 {
		l.MaxWallSeconds = DefaultMaxWallSeconds
	}
	return l
}

// tripped names the limit sub has exceeded, or "".
func tripped(sub contracts.Submission, l contracts.Limits, now time.Time) string {
	l = limitsOf(l)
	switch {
	case sub.Phase == contracts.PhaseModel && sub.Step >= l.MaxSteps:
		return "steps"
	case sub.Usage.InputTokens+sub.Usage.OutputTokens > l.MaxTokens:
		return "tokens"
	case !sub.StartedAt.IsZero() && working(sub, now) > seconds(int64(l.MaxWallSeconds)):
		return "wall_time"
	}
	return ""
}

// working is how long sub has run since it started, less the time it spent
// parked for approval decisions (so far, and now if it is parked).
func working(sub contracts.Submission, now time.Time) time.Duration {
	parked := time.Duration(sub.ParkedNanos)
	if !sub.ParkedAt.IsZero() && now.After(sub.ParkedAt) {
		parked += now.Sub(sub.ParkedAt)
	}
	return now.Sub(sub.StartedAt) - parked
}

// unpark folds a finished park into ParkedNanos (the lease write that
// resumes a parked turn does it).
func unpark(n *contracts.Submission, now time.Time) {
	if n.ParkedAt.IsZero() {
		return
	}
	if now.After(n.ParkedAt) {
		n.ParkedNanos += int64(now.Sub(n.ParkedAt))
	}
	n.ParkedAt = time.Time{}
}

// seconds is n seconds as a Duration, saturating instead of overflowing
// (a spec stored before its numbers were bounded at creation may hold any).
func seconds(n int64) time.Duration {
	const most = int64(math.MaxInt64 / int64(time.Second))
	return time.Duration(min(max(n, 0), most)) * time.Second
}
