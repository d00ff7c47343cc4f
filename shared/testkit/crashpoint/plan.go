package crashpoint

import (
	"context"
	"errors"
	"sync"
)

// Crash is the value the decorators panic with at the planned write.
var Crash = errors.New("crashpoint: simulated crash")

// IsCrash reports whether r, a value returned by recover, is Crash.
func IsCrash(r any) bool {
	err, ok := r.(error)
	return ok && errors.Is(err, Crash)
}

// Recover runs f and reports whether it panicked with Crash; any other panic
// propagates.
func Recover(f func()) (crashed bool) {
	defer func() {
		if r := recover(); r != nil {
			if !IsCrash(r) {
				panic(r)
			}
			crashed = true
		}
	}()
	f()
	return false
}

// Point is one write call seen by a Plan.
type Point struct {
	N      int    // 1-based write number
	Op     string // the port method, e.g. "UpdateSubmission", "Send"; "Batch" for a batch's commit
	Key    string // the first key it writes: record id, stream key, event key, queue/dedup id; a batch's ops
	Before bool   // for the fired point: the crash came before the write
	// InBatch: the write is inside a batch (Ports.Batch), so a crash after
	// it still loses it: nothing of a batch is durable before its commit.
	InBatch bool
	// Batched, for a fired point inside a batch: the ops of the batch up
	// to and including this one (none of them durable yet).
	Batched []string
}

// Plan is shared by every decorator of one Wrap. Set K and Before before the
// first write; the rest is updated under the Plan's lock. It is safe for
// concurrent use.
type Plan struct {
	K      int  // crash at this write number (1-based); 0 = only count
	Before bool // crash before the write reaches the adapter, else after it returned

	mu     sync.Mutex
	n      int
	paused bool
	fired  *Point
	points []Point
	queues []*queue
}

// Count returns how many write calls the Plan has counted.
func (p *Plan) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Points returns every counted write call in order.
func (p *Plan) Points() []Point {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Point(nil), p.points...)
}

// Fired returns the write the Plan crashed at, if it did.
func (p *Plan) Fired() (Point, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fired == nil {
		return Point{}, false
	}
	return *p.fired, true
}

// Pause stops counting (and crashing) until Resume: for set-up writes that
// are not part of the scenario, such as creating its session.
func (p *Plan) Pause() { p.setPaused(true) }

// Resume undoes Pause.
func (p *Plan) Resume() { p.setPaused(false) }

func (p *Plan) setPaused(v bool) {
	p.mu.Lock()
	p.paused = v
	p.mu.Unlock()
}

// arm counts one write and reports whether it is the one to crash at.
func (p *Plan) arm(op, key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		return false
	}
	p.n++
	pt := Point{N: p.n, Op: op, Key: key}
	p.points = append(p.points, pt)
	if p.K <= 0 || p.n != p.K || p.fired != nil {
		return false
	}
	pt.Before = p.Before
	p.fired = &pt
	return true
}

// write runs do as write op on key, crashing before or after it as planned.
// Inside a batch the op is also recorded for the batch's own point.
func (p *Plan) write(ctx context.Context, op, key string, do func()) {
	ops, in := ctx.Value(batchKey{}).(*batchOps)
	if in {
		ops.add(op)
	}
	crash := p.arm(op, key)
	if crash && in {
		p.mu.Lock()
		p.fired.InBatch, p.fired.Batched = true, ops.list()
		p.mu.Unlock()
	}
	if crash && p.Before {
		panic(Crash)
	}
	do()
	if crash {
		panic(Crash)
	}
}

// ReleaseInflight makes every message the wrapped queues delivered and that
// was neither deleted nor released visible again at once, through the inner
// queue (uncounted, never crashing), and reports how many it released. It
// stands for the visibility timeout of a dead process's messages passing,
// on a queue whose visibility runs on real time (SQS). A receipt the queue
// no longer honours is skipped.
func (p *Plan) ReleaseInflight(ctx context.Context) (int, error) {
	p.mu.Lock()
	qs := append([]*queue(nil), p.queues...)
	p.mu.Unlock()
	n := 0
	var errs []error
	for _, q := range qs {
		k, err := q.releaseInflight(ctx)
		n += k
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

func (p *Plan) addQueue(q *queue) {
	p.mu.Lock()
	p.queues = append(p.queues, q)
	p.mu.Unlock()
}
