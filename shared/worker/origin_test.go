package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/worker"
)

// handled is one handler run of the origin world: its message and the
// lease its previous phase (or origin) handed it.
type handled struct {
	kind, lease string
}

// originWorld is a chainWorld whose pool runs (Run), reporting each
// handler run on a channel.
func originWorld(t *testing.T) (*chainWorld, <-chan handled, func()) {
	w := newChainWorld(t, true)
	runs := make(chan handled, 16)
	inner := w.pool.Handle
	w.pool.Handle = func(ctx context.Context, m contracts.Message) error {
		lease, _ := worker.Chainer{}.Carried(ctx)
		err := inner(ctx, m)
		runs <- handled{kind: m.Kind, lease: lease}
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		w.pool.Run(ctx)
		close(stopped)
	}()
	stop := func() { cancel(); <-stopped }
	t.Cleanup(stop)
	return w, runs, stop
}

// originSend is an accept's begin: outside any handler, a batch that sends
// the first phase and hands it the lease the batch took.
func originSend(t *testing.T, w *chainWorld, c worker.Chainer, fail error) func() {
	t.Helper()
	ctx, handed := c.Origin(context.Background())
	batch := worker.DeferredBatcher{Batcher: w.rq.Queue.(contracts.Batcher)}
	err := batch.Batch(ctx, func(ctx context.Context) error {
		if err := w.q.Send(ctx, contracts.QueueModel, msg("s1", "sub-1")); err != nil {
			return err
		}
		if c.Claimed(ctx) {
			c.Handoff(ctx, "lease-1", nil)
		}
		return fail
	})
	if !errors.Is(err, fail) {
		t.Fatalf("batch: %v, want %v", err, fail)
	}
	return handed
}

func TestOriginHandsItsSendToTheRunningPool(t *testing.T) {
	w, runs, _ := originWorld(t)
	c := worker.Chainer{Pool: w.pool}
	<-w.pool.Serving()
	originSend(t, w, c, nil)()
	first, second := <-runs, <-runs
	if first.kind != contracts.QueueModel || first.lease != "lease-1" {
		t.Fatalf("first run %+v, want the model phase with the lease its origin took", first)
	}
	if second.kind != contracts.QueueTools {
		t.Fatalf("second run %+v, want the tools phase it chained", second)
	}
	if got := w.rq.n.Load(); got != 0 {
		t.Fatalf("%d receives returned messages, want 0: the handed message went through the queue", got)
	}
}

func TestOriginOfAFailedBatchHandsNothing(t *testing.T) {
	w, runs, stop := originWorld(t)
	c := worker.Chainer{Pool: w.pool}
	<-w.pool.Serving()
	originSend(t, w, c, context.Canceled)()
	stop()
	select {
	case r := <-runs:
		t.Fatalf("a rolled-back send ran %+v", r)
	default:
	}
	if n, err := w.pool.Once(context.Background(), contracts.QueueModel, 10); err != nil || n != 0 {
		t.Fatalf("Once after a rolled-back origin = %d, %v; want nothing on the queue", n, err)
	}
}

// A pool that stopped between the batch and the hand-off makes the handed
// message visible at once: the next process need not wait out its
// visibility (no clock moves here).
func TestOriginReleasesWhatAStoppedPoolWasHanded(t *testing.T) {
	w, _, stop := originWorld(t)
	c := worker.Chainer{Pool: w.pool}
	<-w.pool.Serving()
	handed := originSend(t, w, c, nil)
	stop()
	handed()
	w.pool.Handle = func(context.Context, contracts.Message) error { return nil }
	if n, err := w.pool.Once(context.Background(), contracts.QueueModel, 10); err != nil || n != 1 {
		t.Fatalf("Once after the stop = %d, %v; want the released message", n, err)
	}
}

// Without a running pool an origin is a plain send: nobody would take a
// handed message.
func TestOriginWithoutARunningPoolSendsThroughTheQueue(t *testing.T) {
	w := newChainWorld(t, true)
	c := worker.Chainer{Pool: w.pool}
	originSend(t, w, c, nil)()
	if n, err := w.pool.Once(context.Background(), contracts.QueueModel, 1); err != nil || n != 1 {
		t.Fatalf("Once = %d, %v; want the message received from the queue", n, err)
	}
	if got := w.rq.n.Load(); got != 1 {
		t.Fatalf("%d receives, want 1", got)
	}
}

// Messages handed while the pool's one receiver is busy are all handled
// when it is free — not one per wake-up and the rest at the next poll (an
// hour here: only hand-offs and sends can wake it). Past the backlog bound
// (one waiting per receiver) a send goes through the queue, and its
// wake-up brings the receiver to it.
func TestOriginHandedWhileBusyAreAllHandled(t *testing.T) {
	store, _ := newStore(t)
	q := worker.NotifyQueue{Queue: store, Signals: &worker.Signals{}}
	batch := worker.DeferredBatcher{Batcher: store}
	pool := &worker.Pool{Queue: q, Queues: []string{contracts.QueueModel}, Chain: []string{contracts.QueueModel}, Concurrency: 1, Poll: time.Hour,
		Wake: q.Signals.Wait}
	busy, release := make(chan struct{}), make(chan struct{})
	done := make(chan string, 4)
	pool.Handle = func(ctx context.Context, m contracts.Message) error {
		if m.SubmissionID == "sub-1" {
			close(busy)
			<-release
		}
		done <- m.SubmissionID
		return batch.Batch(ctx, func(ctx context.Context) error { return worker.Ack(ctx) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { pool.Run(ctx); close(stopped) }()
	released := false
	defer func() {
		if !released {
			close(release)
		}
		cancel()
		<-stopped
	}()
	<-pool.Serving()
	c := worker.Chainer{Pool: pool}
	hand := func(session, sub string) bool {
		t.Helper()
		octx, handed := c.Origin(context.Background())
		defer handed()
		if err := batch.Batch(octx, func(ctx context.Context) error { return q.Send(ctx, contracts.QueueModel, msg(session, sub)) }); err != nil {
			t.Fatal(err)
		}
		return c.Claimed(octx)
	}
	if !hand("s1", "sub-1") {
		t.Fatal("sub-1 was not handed to the idle pool")
	}
	<-busy
	if !hand("s2", "sub-2") {
		t.Fatal("sub-2 was not handed: nothing waits yet")
	}
	if hand("s3", "sub-3") {
		t.Fatal("sub-3 was handed past the backlog bound")
	}
	close(release)
	released = true
	got := map[string]bool{}
	for range 3 {
		got[<-done] = true
	}
	if !got["sub-1"] || !got["sub-2"] || !got["sub-3"] {
		t.Fatalf("handled %v, want sub-1, sub-2 and sub-3", got)
	}
}
