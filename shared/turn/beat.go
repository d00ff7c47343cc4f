package turn

import (
	"sync"
	"time"
)

// A beat runs f every period until f returns false or the beat is
// stopped. It has no goroutine of its own while it waits: it is a re-armed
// time.AfterFunc, so a phase that ends before its first beat — nearly all
// of them — costs two timers, not a goroutine, two tickers and a hand-off
// at its release. f runs under the beat's lock: stop returns only once a
// run in progress has ended, and none starts after it.
type beat struct {
	mu      sync.Mutex
	stopped bool        // f said stop, or stop was called
	halted  bool        // stop was called
	t       *time.Timer // every's
	quit    chan struct{}
	done    chan struct{} // ticked's goroutine
}

// every starts a beat of f every period.
func every(period time.Duration, f func() bool) *beat {
	b := &beat{}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.t = time.AfterFunc(period, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.stopped {
			return
		}
		if !f() {
			b.stopped = true
			return
		}
		b.t.Reset(period)
	})
	return b
}

// ticked starts a beat of f on each of ticks (a test's manual heartbeat,
// Deps.Heartbeat); stopTicks is called when it ends.
func ticked(ticks <-chan time.Time, stopTicks func(), f func() bool) *beat {
	b := &beat{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		defer stopTicks()
		for {
			select {
			case <-b.quit:
				return
			case <-ticks:
				b.mu.Lock()
				more := !b.stopped && f()
				b.stopped = !more
				b.mu.Unlock()
				if !more {
					return
				}
			}
		}
	}()
	return b
}

// stop ends the beat, waiting for a run of f in progress. Idempotent.
func (b *beat) stop() {
	b.mu.Lock()
	halted := b.halted
	b.stopped, b.halted = true, true
	if b.t != nil {
		b.t.Stop()
	}
	b.mu.Unlock()
	if b.quit != nil && !halted {
		close(b.quit)
		<-b.done
	}
}
