package worker

import (
	"context"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Signal is a broadcast wake-up: Wait returns a channel closed by the next
// Fire.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns the channel the next Fire closes.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Fire wakes every current waiter.
func (s *Signal) Fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// Signals is one Signal per name (queue), created on first use.
type Signals struct {
	m sync.Map // name → *Signal
}

// Of returns the signal of name.
func (s *Signals) Of(name string) *Signal {
	v, _ := s.m.LoadOrStore(name, &Signal{})
	return v.(*Signal)
}

// Wait returns the channel the next Fire of name closes.
func (s *Signals) Wait(name string) <-chan struct{} { return s.Of(name).Wait() }

// NotifyQueue wraps a Queue and fires the queue's signal after every
// successful Send, so in-process workers of that queue wake at once instead
// of waiting for a poll (and workers of other queues stay asleep).
type NotifyQueue struct {
	contracts.Queue
	Signals *Signals
}

// Send forwards and fires the queue's signal.
// A send from a handler of a pool that serves queue is claimed for that
// pool when the queue can (claim): it needs no wake-up.
func (n NotifyQueue) Send(ctx context.Context, queue string, m contracts.Message) error {
	sent, claimed, err := claim(ctx, n.Queue, queue, m)
	switch {
	case err != nil:
		return err
	case claimed:
		return nil
	case !sent:
		if err := n.Queue.Send(ctx, queue, m); err != nil {
			return err
		}
	}
	fire(ctx, n.Signals.Of(queue).Fire)
	return nil
}

// NotifyEvents wraps an EventLog and fires Signal after every append, so
// long-polling readers return as soon as progress is written.
type NotifyEvents struct {
	contracts.EventLog
	Signal *Signal
}

// AppendEvent forwards and fires the signal.
func (n NotifyEvents) AppendEvents(ctx context.Context, evs ...contracts.Event) error {
	if err := n.EventLog.AppendEvents(ctx, evs...); err != nil {
		return err
	}
	fire(ctx, n.Signal.Fire)
	return nil
}
