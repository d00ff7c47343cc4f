package worker

import (
	"context"
	"fmt"
	"log/slog"
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
	Log         *slog.Logger
}

// Run blocks until ctx is done.
func (p *Pool) Run(ctx context.Context) {
	var wg sync.WaitGroup
	n := p.Concurrency
	if n <= 0 {
		n = 2
	}
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
	for {
		var wake <-chan struct{}
		if p.Wake != nil {
			wake = p.Wake(q)
		}
		n, err := p.Once(ctx, q, 1)
		if err != nil && ctx.Err() == nil {
			p.log().ErrorContext(ctx, "receiving", "queue", q, "error", err)
		}
		if n > 0 {
			continue
		}
		t.Reset(poll)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
	}
}

// Once receives up to max messages from q and handles them; it returns how
// many it received.
func (p *Pool) Once(ctx context.Context, q string, max int) (int, error) {
	vis := p.Visibility
	if vis <= 0 {
		vis = 30 * time.Second
	}
	ds, err := p.Queue.Receive(ctx, q, max, vis)
	if err != nil {
		return 0, fmt.Errorf("receiving from %s: %w", q, err)
	}
	for _, d := range ds {
		a := &ack{queue: p.Queue, name: q, receipt: d.Receipt}
		if err := p.handle(context.WithValue(ctx, ackKey{}, a), d.Message); err != nil {
			if ctx.Err() != nil {
				return len(ds), nil // shutting down: the message reappears for the next process
			}
			// Left in flight: it reappears after the visibility timeout,
			// like an SQS batch item failure.
			p.log().WarnContext(ctx, "handler failed; message will be redelivered", "queue", q, "session_id", d.Message.SessionID,
				"submission_id", d.Message.SubmissionID, "step", d.Message.Step, "receive_count", d.ReceiveCount, "error", err)
			continue
		}
		if a.acked() { // the handler's closing batch deleted it
			continue
		}
		if err := p.Queue.Delete(ctx, q, d.Receipt); err != nil {
			p.log().WarnContext(ctx, "deleting handled message", "queue", q, "error", err)
		}
	}
	return len(ds), nil
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
