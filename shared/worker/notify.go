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

// NotifyQueue wraps a Queue and fires Signal after every successful Send,
// so in-process workers wake at once instead of waiting for a poll.
type NotifyQueue struct {
	contracts.Queue
	Signal *Signal
}

// Send forwards and fires the signal.
func (n NotifyQueue) Send(ctx context.Context, queue string, m contracts.Message) error {
	if err := n.Queue.Send(ctx, queue, m); err != nil {
		return err
	}
	n.Signal.Fire()
	return nil
}

// NotifyEvents wraps an EventLog and fires Signal after every append, so
// long-polling readers return as soon as progress is written.
type NotifyEvents struct {
	contracts.EventLog
	Signal *Signal
}

// AppendEvent forwards and fires the signal.
func (n NotifyEvents) AppendEvent(ctx context.Context, e contracts.Event) error {
	if err := n.EventLog.AppendEvent(ctx, e); err != nil {
		return err
	}
	n.Signal.Fire()
	return nil
}
