package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Pool runs Concurrency receivers per queue until its context ends.
type Pool struct {
	Queue       contracts.Queue
	Handle      func(context.Context, contracts.Message) error
	Queues      []string
	Concurrency int                                // receivers per queue; default 2
	Visibility  time.Duration                      // default 30s
	Poll        time.Duration                      // idle poll when no wake-up arrives; default 200ms
	Wake        func(queue string) <-chan struct{} // fires when queue may have work (may be nil)
	// Chain names the queues a handler's send to may hand the message to
	// this pool as already received (when the queue is a
	// contracts.Claimer and the pool serves it): the pool handles it
	// right after, in the same goroutine and the same Once — no receive,
	// no commit for it, no wake-up. A queue whose messages coalesce while
	// they wait (workflow wake-ups: many node ends, one evaluation) is
	// not one to chain. nil: every message goes through the queue (a test
	// that steps a turn phase by phase).
	Chain []string
	Log   *slog.Logger

	mu    sync.Mutex
	live  int                    // Run is serving (Origin hands it messages only then)
	ready chan struct{}          // closed once Run serves (Serving)
	inbox map[string][]handedMsg // queue → messages handed to it (Origin), oldest first
	kicks sync.Map               // queue → chan struct{}: a token per handed message (kick)
}

// Run blocks until ctx is done.
func (p *Pool) Run(ctx context.Context) {
	var wg sync.WaitGroup
	n := p.concurrency()
	p.mu.Lock()
	p.live++
	p.readyLocked()
	select {
	case <-p.ready:
	default:
		close(p.ready)
	}
	p.mu.Unlock()
	defer p.stopped()
	for _, q := range p.Queues {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.loop(ctx, q)
			}()
		}
	}
	wg.Wait()
}

func (p *Pool) loop(ctx context.Context, q string) {
	poll := p.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	t := time.NewTimer(0)
	defer t.Stop()
	kick := p.kick(q)
	for {
		var wake <-chan struct{}
		if p.Wake != nil {
			wake = p.Wake(q)
		}
		n, handed, err := p.once(ctx, q, 1)
		for err == nil && n > 0 && handed && p.waiting(q) {
			// more were handed meanwhile: take them under the same wake,
			// which a send to q during any of them closed
			n, handed, err = p.once(ctx, q, 1)
		}
		if err != nil && ctx.Err() == nil {
			p.log().ErrorContext(ctx, "receiving", "queue", q, "error", err)
		}
		if n > 0 && !handed {
			continue // received: more may wait behind it
		}
		// Nothing, or a message handed to the pool (Origin): a send to q
		// while it ran closed wake, a hand-off left a token in kick, and
		// what neither announces (another process's send, a visibility
		// that ran out) the poll finds — no receive for nothing after
		// every handed turn.
		t.Reset(poll)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-kick:
		case <-t.C:
		}
	}
}

// Serving returns a channel closed once Run serves: from then on a write
// outside any handler may hand it its first phase (Chainer.Origin).
func (p *Pool) Serving() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.readyLocked()
	return p.ready
}

func (p *Pool) readyLocked() {
	if p.ready == nil {
		p.ready = make(chan struct{})
	}
}

// Once handles a message handed to the pool on q (Origin), or else
// receives up to max messages from q and handles them; it returns how many
// it handled.
func (p *Pool) Once(ctx context.Context, q string, max int) (int, error) {
	n, _, err := p.once(ctx, q, max)
	return n, err
}

// once is Once that also says whether what it handled was handed (Origin).
func (p *Pool) once(ctx context.Context, q string, max int) (n int, handed bool, err error) {
	if m, ok := p.take(q); ok {
		for next, queue, handed := &m.d, q, m.handed; next != nil; {
			next, queue, handed = p.deliver(ctx, queue, *next, handed)
		}
		return 1, true, nil
	}
	ds, err := p.Queue.Receive(ctx, q, max, p.visibility())
	if err != nil {
		return 0, false, fmt.Errorf("receiving from %s: %w", q, err)
	}
	for _, d := range ds {
		// A handler whose closing write sent the next phase to a queue of
		// this pool had it claimed (claim): handle it here, now.
		for next, queue, handed := &d, q, (Handed{}); next != nil; {
			next, queue, handed = p.deliver(ctx, queue, *next, handed)
		}
	}
	return len(ds), false, nil
}

// deliver handles one received message (carried: what its previous
// phase's handler took for it) and acknowledges it, and returns the message
// its handler claimed for this pool, if any, with its queue and what was
// handed with it.
func (p *Pool) deliver(ctx context.Context, q string, d contracts.Delivery, carried Handed) (*contracts.Delivery, string, Handed) {
	a := &ack{queue: p.Queue, name: q, receipt: d.Receipt, pool: p, carried: carried}
	herr := p.handle(context.WithValue(ctx, ackKey{}, a), d.Message)
	next, nextQ, handed := a.claimedNext()
	switch {
	case herr != nil && ctx.Err() != nil:
		// shutting down: the message reappears for the next process
	case herr != nil:
		// Left in flight: it reappears after the visibility timeout,
		// like an SQS batch item failure.
		p.log().WarnContext(ctx, "handler failed; message will be redelivered", "queue", q, "session_id", d.Message.SessionID,
			"submission_id", d.Message.SubmissionID, "step", d.Message.Step, "receive_count", d.ReceiveCount, "error", herr)
	case a.acked(): // the handler's closing batch deleted it
	default:
		if err := p.Queue.Delete(ctx, q, d.Receipt); err != nil {
			p.log().WarnContext(ctx, "deleting handled message", "queue", q, "error", err)
		}
	}
	if next == nil {
		return nil, "", Handed{}
	}
	if ctx.Err() != nil { // not handled here after all: visible now for the next process
		if err := p.Queue.Release(context.WithoutCancel(ctx), nextQ, next.Receipt); err != nil {
			p.log().WarnContext(ctx, "releasing a claimed message at shutdown", "queue", nextQ, "error", err)
		}
		return nil, "", Handed{}
	}
	return next, nextQ, handed
}

func (p *Pool) concurrency() int {
	if p.Concurrency <= 0 {
		return 2
	}
	return p.Concurrency
}

func (p *Pool) visibility() time.Duration {
	if p.Visibility <= 0 {
		return 30 * time.Second
	}
	return p.Visibility
}

// chains reports whether a handler's send to queue may be claimed for
// this pool (Chain names it, and the pool receives from it).
func (p *Pool) chains(queue string) bool {
	return slices.Contains(p.Chain, queue) && slices.Contains(p.Queues, queue)
}

func (p *Pool) handle(ctx context.Context, m contracts.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v", r)
		}
	}()
	return p.Handle(ctx, m)
}

func (p *Pool) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}
