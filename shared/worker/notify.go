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

// KeyedSignal is a broadcast wake-up per key (a submission id) that holds
// only keys someone waits on: Wait registers a waiter and returns the
// channel the key's next Fire closes with the function that unregisters
// it (call it when done waiting); Fire of a key nobody waits on is a
// no-op, so keys never pile up.
type KeyedSignal struct {
	mu sync.Mutex
	m  map[string]*keyed
}

type keyed struct {
	ch      chan struct{}
	waiters int
}

// Wait returns the channel the next Fire of key closes and the function
// that ends this wait.
func (s *KeyedSignal) Wait(key string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*keyed{}
	}
	k := s.m[key]
	if k == nil {
		k = &keyed{ch: make(chan struct{})}
		s.m[key] = k
	}
	k.waiters++
	var once sync.Once
	return k.ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if k.waiters--; k.waiters == 0 && s.m[key] == k {
				delete(s.m, key)
			}
		})
	}
}

// Fire wakes every current waiter of key.
func (s *KeyedSignal) Fire(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.m[key]; k != nil {
		close(k.ch)
		delete(s.m, key)
	}
}

// Waiting is how many keys have waiters.
func (s *KeyedSignal) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
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

// NotifyEvents wraps an EventLog and fires Signal after every append, and
// Submissions (if set) for each submission appended to, so long-polling
// readers return as soon as progress is written — a reader of one
// submission's events waits on its own key, not on every turn's.
type NotifyEvents struct {
	contracts.EventLog
	Signal      *Signal
	Submissions *KeyedSignal
}

// AppendEvent forwards and fires the signals.
func (n NotifyEvents) AppendEvents(ctx context.Context, evs ...contracts.Event) error {
	if err := n.EventLog.AppendEvents(ctx, evs...); err != nil {
		return err
	}
	if n.Signal != nil {
		fire(ctx, n.Signal.Fire)
	}
	if n.Submissions != nil {
		for i, ev := range evs {
			if i == 0 || ev.SubmissionID != evs[i-1].SubmissionID {
				fire(ctx, func() { n.Submissions.Fire(ev.SubmissionID) })
			}
		}
	}
	return nil
}
