package worker

import (
	"context"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Origin hands the first phase a write outside any handler starts (an
// accept's begin: its advance and its send in one batch) to a running pool
// as already received, as a handler's closing write hands on its next
// phase (claim): the send is claimed for the pool, its lease taken in the
// same write (Handoff), and the pool runs it next — no receive, no lease
// write of its own. The pool's next free receiver of that queue takes it
// (Once takes handed messages before it receives).
//
// Origin returns ctx ready for that and the function to call once the
// batch has ended (committed or not): it gives the claimed message, if
// the batch committed one, to the pool. ctx already of a handler (a
// commit's start of the next turn) or a pool that is not running gets
// ctx as it is: a claim there is the handler's, or none. So does a pool
// whose receivers have more handed messages waiting than there are of them
// (originBacklog): a message waiting longer than its visibility would be
// received a second time, so past that point sends go through the queue.
func (c Chainer) Origin(ctx context.Context) (context.Context, func()) {
	p := c.Pool
	if p == nil || !p.accepting() {
		return ctx, func() {}
	}
	if _, in := ctx.Value(ackKey{}).(*ack); in {
		return ctx, func() {}
	}
	a := &ack{queue: p.Queue, pool: p, origin: true}
	return context.WithValue(ctx, ackKey{}, a), func() {
		if next, q, handed := a.claimedNext(); next != nil {
			p.hand(q, *next, handed)
		}
	}
}

// handedMsg is a claimed message waiting for one of the pool's receivers.
type handedMsg struct {
	d      contracts.Delivery
	handed Handed
}

// hand queues d (claimed for this pool on q) for the next receiver of q
// and wakes one. A pool that stopped in the meantime makes it visible
// again for whoever serves the queue next.
func (p *Pool) hand(q string, d contracts.Delivery, h Handed) {
	p.mu.Lock()
	if p.live == 0 {
		p.mu.Unlock()
		p.release(context.Background(), q, d)
		return
	}
	if p.inbox == nil {
		p.inbox = map[string][]handedMsg{}
	}
	p.inbox[q] = append(p.inbox[q], handedMsg{d: d, handed: h})
	p.mu.Unlock()
	select {
	case p.kick(q) <- struct{}{}: // a token per message: one receiver wakes for it
	default: // tokens enough wait already; a receiver that takes one looks again after (loop)
	}
}

// take pops the oldest message handed to q, if any.
func (p *Pool) take(q string) (handedMsg, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	box := p.inbox[q]
	if len(box) == 0 {
		return handedMsg{}, false
	}
	m := box[0]
	box[0] = handedMsg{}
	p.inbox[q] = box[1:]
	select {
	case <-p.kick(q): // its token, if still there: no receiver wakes for a message gone
	default:
	}
	return m, true
}

// waiting reports whether messages handed to q wait.
func (p *Pool) waiting(q string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inbox[q]) > 0
}

// kick is the in-pool wake-up of q's receivers for handed messages: a
// token per message, not a broadcast — every receiver would wake, and all
// but one receive nothing.
func (p *Pool) kick(q string) chan struct{} {
	if v, ok := p.kicks.Load(q); ok {
		return v.(chan struct{})
	}
	v, _ := p.kicks.LoadOrStore(q, make(chan struct{}, kickTokens))
	return v.(chan struct{})
}

// kickTokens bounds the tokens waiting per queue; more handed messages
// than that are found by the receiver that handled the one before (loop).
const kickTokens = 64

// originBacklog is how many handed messages per receiver of one queue (a
// turn's first phase: the model queue's) may wait, before Origin stops
// handing more: each of those receivers runs a whole chained turn before
// it takes the next.
const originBacklog = 1

// accepting reports whether Run serves and its receivers are not behind
// on handed messages.
func (p *Pool) accepting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live == 0 {
		return false
	}
	waiting := 0
	for _, box := range p.inbox {
		waiting += len(box)
	}
	return waiting < originBacklog*p.concurrency()
}

// stopped releases, once the pool's last receiver ended, what was handed
// to it and not taken: visible again now, not after its visibility.
func (p *Pool) stopped() {
	p.mu.Lock()
	p.live--
	var left map[string][]handedMsg
	if p.live == 0 {
		left, p.inbox = p.inbox, nil
	}
	p.mu.Unlock()
	for q, box := range left {
		for _, m := range box {
			p.release(context.Background(), q, m.d)
		}
	}
}

func (p *Pool) release(ctx context.Context, q string, d contracts.Delivery) {
	if err := p.Queue.Release(ctx, q, d.Receipt); err != nil {
		p.log().WarnContext(ctx, "releasing a handed message", "queue", q, "error", err)
	}
}
