package worker

import (
	"context"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
)

// DeferredBatcher wraps a store's Batcher so that the wake-ups of the sends
// and appends made inside a batch (NotifyQueue, NotifyEvents) fire once the
// batch committed, not before: a worker or reader woken earlier would look
// before the write is visible and then sleep until its next poll. A batch
// that fails fires nothing (what it wrote is gone).
type DeferredBatcher struct {
	contracts.Batcher
}

type deferKey struct{}

// deferred collects the wake-ups of one outermost batch.
type deferred struct {
	mu    sync.Mutex
	fires []func()
}

// Batch runs fn in the inner batch and fires its wake-ups after commit. A
// batch inside a batch adds to the outer one's.
func (b DeferredBatcher) Batch(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(deferKey{}).(*deferred); ok {
		return b.Batcher.Batch(ctx, fn)
	}
	d := &deferred{}
	if err := b.Batcher.Batch(context.WithValue(ctx, deferKey{}, d), fn); err != nil {
		return err
	}
	d.mu.Lock()
	fires := d.fires
	d.mu.Unlock()
	for _, f := range fires {
		f()
	}
	return nil
}

// fire runs f now, or after the commit of the batch ctx is part of.
func fire(ctx context.Context, f func()) {
	d, ok := ctx.Value(deferKey{}).(*deferred)
	if !ok {
		f()
		return
	}
	d.mu.Lock()
	d.fires = append(d.fires, f)
	d.mu.Unlock()
}

type ackKey struct{}

// ack is the delivery a handler runs for, which it may delete itself as
// part of its closing batch (Ack).
type ack struct {
	queue   contracts.Queue
	name    string
	receipt string
	pool    *Pool // the pool handling it: the next phase may continue here (claim)
	origin  bool  // no delivery: a write outside any handler (Origin)
	mu      sync.Mutex
	done    bool                // deleted, and the deleting batch committed
	fwdIn   *deferred           // the batch whose claim consumed it (Forward): Ack there deletes nothing
	claimed bool                // a send of this handler was claimed (maybe not committed yet)
	next    *contracts.Delivery // that claimed message, once its batch committed
	nextQ   string              // and its queue
	handoff Handed              // what its handler gives the claimed message's (Handoff)
	carried Handed              // what the previous handler gave this message's (Carried)
}

// Handed is what a phase's handler gives the next phase's, handed to the
// same worker: the lease it took for that phase ("" none) and the record
// its closing batch wrote (nil none), so the next handler need not read it.
type Handed struct {
	Lease  string
	Record *contracts.Submission
}

// Ack deletes the delivery the handler of ctx runs for, inside the batch
// ctx is part of (DeferredBatcher), so the message is consumed in the same
// write as the advance and the next phase's send; the pool then does not
// delete it again. Without a delivery (a handler called directly, or on
// Lambda, where the event source mapping deletes) it does nothing. A
// failure is returned; the pool then deletes as usual.
func Ack(ctx context.Context) error {
	a, ok := ctx.Value(ackKey{}).(*ack)
	if !ok || a.origin {
		return nil
	}
	d, _ := ctx.Value(deferKey{}).(*deferred)
	a.mu.Lock()
	done := a.done || (d != nil && a.fwdIn == d)
	a.mu.Unlock()
	if done {
		return nil
	}
	if err := a.queue.Delete(ctx, a.name, a.receipt); err != nil {
		return err
	}
	fire(ctx, func() { // once the batch committed: rolled back, the pool deletes
		a.mu.Lock()
		a.done = true
		a.mu.Unlock()
	})
	return nil
}

func (a *ack) acked() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done
}

// claim sends m to queue as already received by this pool (Claimer) when
// the handler of ctx runs in a pool that chains queue and has not claimed
// a message yet: the pool handles it right after this one, in the same
// goroutine — no receive and no wake-up. A queue that can (Forwarder)
// turns the handled message into m in the same write, so the handler's
// Ack has nothing left to delete. sent: m is on the queue (claimed
// when ok; visible otherwise, to be announced); neither: the caller sends.
func claim(ctx context.Context, q contracts.Queue, queue string, m contracts.Message) (sent, ok bool, err error) {
	a, _ := ctx.Value(ackKey{}).(*ack)
	c, can := q.(contracts.Claimer)
	if a == nil || !can || !a.chaining(queue) {
		return false, false, nil
	}
	a.mu.Lock()
	if a.claimed {
		a.mu.Unlock()
		return false, false, nil
	}
	a.claimed = true
	a.mu.Unlock()
	var d contracts.Delivery
	var consumed bool
	if f, can := q.(contracts.Forwarder); can && !a.origin && !a.acked() {
		d, ok, consumed, err = f.Forward(ctx, a.name, a.receipt, queue, m, a.pool.visibility())
	} else {
		d, ok, err = c.SendClaimed(ctx, queue, m, a.pool.visibility())
	}
	if err != nil || !ok {
		a.mu.Lock()
		a.claimed = false
		a.mu.Unlock()
		return err == nil, false, err
	}
	if consumed { // the handled message became this one: Ack in this batch deletes nothing
		b, _ := ctx.Value(deferKey{}).(*deferred)
		a.mu.Lock()
		a.fwdIn = b
		a.mu.Unlock()
	}
	fire(ctx, func() { // once the batch committed: rolled back, it was never sent
		a.mu.Lock()
		a.next, a.nextQ = &d, queue
		a.done = a.done || consumed
		a.mu.Unlock()
	})
	return true, true, nil
}

// chaining reports whether a send to queue from this delivery's handler
// may be claimed: the pool chains both queue and the delivery's own queue.
// A workflow evaluation's sends (its nodes' first phases) are never
// claimed: claimed, one would consume the wake-up being handled (Forward)
// in a node's start, before the evaluation's later starts and its record
// — an error after it would lose the wake-up instead of retrying it.
func (a *ack) chaining(queue string) bool {
	return a.pool.chains(queue) && (a.origin || a.pool.chains(a.name))
}

// claimedNext is the message a handler's send claimed for this pool, if
// its batch committed, its queue and what was handed off with it.
func (a *ack) claimedNext() (*contracts.Delivery, string, Handed) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.next, a.nextQ, a.handoff
}

// Chainer is the worker's side of a phase handed to the same worker
// (Pool.Chain), for a handler that wants to do the next phase's first write
// in its own closing write (turn.Deps.Chain).
type Chainer struct {
	Pool *Pool // the pool an Origin hands to; nil: none
}

// Claims reports whether a send to queue by the handler of ctx would be
// claimed for this pool (claim), unless the message's group has another
// message waiting on queue: the pool chains queue, its queue can claim,
// and nothing was claimed yet.
func (Chainer) Claims(ctx context.Context, queue string) bool {
	a, _ := ctx.Value(ackKey{}).(*ack)
	if a == nil || !a.chaining(queue) {
		return false
	}
	q := a.pool.Queue
	if n, ok := q.(NotifyQueue); ok {
		q = n.Queue
	}
	if _, ok := q.(contracts.Claimer); !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.claimed
}

// Claimed reports whether a send of the handler of ctx was claimed for
// this pool: the next phase runs here, right after this handler.
func (Chainer) Claimed(ctx context.Context) bool {
	a, _ := ctx.Value(ackKey{}).(*ack)
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.claimed
}

// Handoff gives the claimed message's handler the lease owner the handler
// of ctx took for it ("" none) and the record its batch wrote (nil none),
// once that batch committed (in the same batch as the claim: with it, or
// not at all).
func (Chainer) Handoff(ctx context.Context, lease string, rec *contracts.Submission) {
	a, _ := ctx.Value(ackKey{}).(*ack)
	if a == nil {
		return
	}
	fire(ctx, func() {
		a.mu.Lock()
		a.handoff = Handed{Lease: lease, Record: rec}
		a.mu.Unlock()
	})
}

// Carried is what the previous phase's handler gave the handler of ctx for
// its message: the lease owner it took ("" none) and the record it wrote
// (nil none). It is given once: a second run for the same delivery takes
// its own lease (and loses to the first) and reads the record.
func (Chainer) Carried(ctx context.Context) (string, *contracts.Submission) {
	a, _ := ctx.Value(ackKey{}).(*ack)
	if a == nil {
		return "", nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.carried
	a.carried = Handed{}
	return c.Lease, c.Record
}
