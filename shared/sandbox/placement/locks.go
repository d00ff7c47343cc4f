package placement

import (
	"context"
	"sync"
)

// Locks serialises work per key (a session id) inside one process, so that
// concurrent Acquires of a session never start two sandboxes: the second
// waits and then finds the first one's record. Across processes the
// conditional session write (Replace) decides instead. The zero value is
// ready to use; entries are dropped when nobody holds or waits for them.
type Locks struct {
	mu    sync.Mutex
	gates map[string]*gate
}

type gate struct {
	ch   chan struct{}
	refs int
}

// Lock takes the lock of key, waiting until it is free or ctx ends (then
// ctx's error). The returned func releases it and must be called once.
func (l *Locks) Lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.gates == nil {
		l.gates = map[string]*gate{}
	}
	g := l.gates[key]
	if g == nil {
		g = &gate{ch: make(chan struct{}, 1)}
		l.gates[key] = g
	}
	g.refs++
	l.mu.Unlock()

	select {
	case g.ch <- struct{}{}:
		return func() {
			<-g.ch
			l.drop(key, g)
		}, nil
	case <-ctx.Done():
		l.drop(key, g)
		return nil, ctx.Err()
	}
}

func (l *Locks) drop(key string, g *gate) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g.refs--; g.refs == 0 {
		delete(l.gates, key)
	}
}
