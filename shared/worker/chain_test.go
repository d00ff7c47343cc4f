package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/worker"
)

// receives counts the Receive calls that returned messages.
type receives struct {
	contracts.Queue
	n atomic.Int32
}

func (r *receives) Receive(ctx context.Context, q string, max int, vis time.Duration) ([]contracts.Delivery, error) {
	ds, err := r.Queue.Receive(ctx, q, max, vis)
	if len(ds) > 0 {
		r.n.Add(1)
	}
	return ds, err
}

// SendClaimed forwards, so the counter does not hide the store's Claimer.
func (r *receives) SendClaimed(ctx context.Context, q string, m contracts.Message, vis time.Duration) (contracts.Delivery, bool, error) {
	return r.Queue.(contracts.Claimer).SendClaimed(ctx, q, m, vis)
}

// Forward forwards, so the counter does not hide the store's Forwarder.
func (r *receives) Forward(ctx context.Context, from, receipt, q string, m contracts.Message, vis time.Duration) (contracts.Delivery, bool, bool, error) {
	return r.Queue.(contracts.Forwarder).Forward(ctx, from, receipt, q, m, vis)
}

// chainWorld is a pool over the real SQLite queue whose handler of the
// model queue sends the message's next phase to the tools queue, inside a
// batch with its ack, as the engine's closing writes do.
type chainWorld struct {
	pool   *worker.Pool
	rq     *receives
	q      contracts.Queue
	wakes  *worker.Signals
	calls  []string // queue kind + submission, in order handled
	failAt string   // a handler of this kind fails after its closing batch
}

func newChainWorld(t *testing.T, chain bool) *chainWorld {
	store, _ := newStore(t)
	w := &chainWorld{rq: &receives{Queue: store}, wakes: &worker.Signals{}}
	w.q = worker.NotifyQueue{Queue: w.rq, Signals: w.wakes}
	batch := worker.DeferredBatcher{Batcher: store}
	w.pool = &worker.Pool{Queue: w.q, Queues: []string{contracts.QueueModel, contracts.QueueTools}}
	if chain {
		w.pool.Chain = w.pool.Queues
	}
	w.pool.Handle = func(ctx context.Context, m contracts.Message) error {
		w.calls = append(w.calls, m.Kind+":"+m.SubmissionID)
		err := batch.Batch(ctx, func(ctx context.Context) error {
			if m.Kind == contracts.QueueModel {
				next := m
				next.Kind, next.Phase = contracts.QueueTools, contracts.PhaseTools
				if err := w.q.Send(ctx, contracts.QueueTools, next); err != nil {
					return err
				}
			}
			return worker.Ack(ctx)
		})
		if err == nil && m.Kind == w.failAt {
			return context.DeadlineExceeded // after the batch committed
		}
		return err
	}
	return w
}

func TestChainHandlesTheNextPhaseWithoutAReceive(t *testing.T) {
	w := newChainWorld(t, true)
	send(t, w.q, msg("s1", "sub-1"))
	wake := w.wakes.Wait(contracts.QueueTools)
	n, err := w.pool.Once(context.Background(), contracts.QueueModel, 1)
	if err != nil || n != 1 {
		t.Fatalf("Once = %d, %v", n, err)
	}
	if want := []string{"model:sub-1", "tools:sub-1"}; len(w.calls) != 2 || w.calls[0] != want[0] || w.calls[1] != want[1] {
		t.Fatalf("handled %v, want %v", w.calls, want)
	}
	if got := w.rq.n.Load(); got != 1 {
		t.Fatalf("%d receives, want 1: the claimed tools message went through the queue", got)
	}
	select {
	case <-wake:
		t.Fatal("a claimed send woke the tools workers")
	default:
	}
	// Both were deleted: nothing is left, in flight or visible.
	for _, q := range []string{contracts.QueueModel, contracts.QueueTools} {
		if n, err := w.pool.Once(context.Background(), q, 10); err != nil || n != 0 {
			t.Fatalf("Once(%s) after the chain = %d, %v; want nothing", q, n, err)
		}
	}
}

func TestChainOffGoesThroughTheQueue(t *testing.T) {
	w := newChainWorld(t, false)
	send(t, w.q, msg("s1", "sub-1"))
	wake := w.wakes.Wait(contracts.QueueTools)
	if _, err := w.pool.Once(context.Background(), contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	if len(w.calls) != 1 {
		t.Fatalf("handled %v, want only the model message", w.calls)
	}
	<-wake // the send announced itself
	if n, err := w.pool.Once(context.Background(), contracts.QueueTools, 1); err != nil || n != 1 {
		t.Fatalf("Once(tools) = %d, %v", n, err)
	}
	if got := w.rq.n.Load(); got != 2 {
		t.Fatalf("%d receives, want 2", got)
	}
}

// A handler that fails after its closing batch committed still hands on
// the message that batch claimed: it is written, and nobody else can
// receive it within its visibility.
func TestChainGoesOnAfterAFailureOnceTheBatchCommitted(t *testing.T) {
	w := newChainWorld(t, true)
	w.failAt = contracts.QueueModel
	send(t, w.q, msg("s1", "sub-1"))
	if _, err := w.pool.Once(context.Background(), contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	if len(w.calls) != 2 {
		t.Fatalf("handled %v, want the model message and the claimed tools one", w.calls)
	}
}

// At shutdown a claimed message not yet handled is released: the next
// process gets it at once instead of after its visibility timeout.
func TestChainReleasesTheClaimedMessageAtShutdown(t *testing.T) {
	w := newChainWorld(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	inner := w.pool.Handle
	w.pool.Handle = func(hctx context.Context, m contracts.Message) error {
		err := inner(hctx, m)
		if m.Kind == contracts.QueueModel {
			cancel() // the process is told to stop while the model phase ends
		}
		return err
	}
	send(t, w.q, msg("s1", "sub-1"))
	if _, err := w.pool.Once(ctx, contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	if len(w.calls) != 1 {
		t.Fatalf("handled %v after the cancel, want only the model message", w.calls)
	}
	n, err := w.pool.Once(context.Background(), contracts.QueueTools, 1) // no clock moved
	if err != nil || n != 1 {
		t.Fatalf("Once(tools) after shutdown = %d, %v; want the released message", n, err)
	}
}

// A handler of a queue the pool does not chain (a workflow evaluation)
// sends into a chained one (a node's first phase): the send is not
// claimed, so it cannot consume the message being handled. Consumed, a
// failure after the send would lose the wake-up instead of retrying it.
func TestASendFromAnUnchainedQueueIsNotClaimed(t *testing.T) {
	store, clock := newStore(t)
	batch := worker.DeferredBatcher{Batcher: store}
	q := worker.NotifyQueue{Queue: store, Signals: &worker.Signals{}} // sends go through the pool's claim, as the engine's do
	var calls []string
	pool := &worker.Pool{Queue: q, Queues: []string{contracts.QueueModel, contracts.QueueWorkflow}, Chain: []string{contracts.QueueModel}, Visibility: time.Minute}
	pool.Handle = func(ctx context.Context, m contracts.Message) error {
		calls = append(calls, m.Kind)
		if m.Kind != contracts.QueueWorkflow {
			return nil
		}
		if err := batch.Batch(ctx, func(ctx context.Context) error {
			return q.Send(ctx, contracts.QueueModel, msg("node-session", "sub-1"))
		}); err != nil {
			return err
		}
		return context.DeadlineExceeded // a later start of the evaluation failed
	}
	wake := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: "run-1", SubmissionID: "run-1", Nonce: "n"}
	if err := store.Send(context.Background(), contracts.QueueWorkflow, wake); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Once(context.Background(), contracts.QueueWorkflow, 1); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 {
		t.Fatalf("handled %v: the node's message was claimed by the evaluation's worker", calls)
	}
	clock.Advance(2 * time.Minute) // past the failed wake-up's visibility
	if n, err := pool.Once(context.Background(), contracts.QueueWorkflow, 1); err != nil || n != 1 {
		t.Fatalf("the failed wake-up redelivered %d times (%v), want once", n, err)
	}
	if n, err := pool.Once(context.Background(), contracts.QueueModel, 10); err != nil || n != 1 {
		t.Fatalf("the node's message received %d times (%v), want once", n, err)
	}
}
