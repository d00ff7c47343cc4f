package meter

import (
	"context"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/pricing"
)

// Tally is one handler run's usage not yet handed on or recorded.
type Tally struct {
	mu         sync.Mutex
	prices     pricing.AWS
	currency   string
	submission string // the turn it counts for ("": an API request, bound by its first Carry)
	pending    contracts.Orchestration
	ahead      float64 // write units charged by Fold ahead of their report
	largest    float64 // the largest single write's units reported
	gb         float64 // the function's memory in GB (0: duration not priced)
	last       time.Time
	now        func() time.Time
}

// Run describes a handler run to Start.
type Run struct {
	Prices     pricing.AWS
	Currency   string
	Submission string                  // the turn it runs for ("": an API request)
	Start      contracts.Orchestration // what it starts with: what its message carried, plus its own invocation
	MemoryMB   int                     // prices its duration by Now (0: not priced)
	Now        func() time.Time
}

type key struct{}

// Start is ctx carrying a new Tally for r.
func Start(ctx context.Context, r Run) context.Context {
	t := &Tally{prices: r.Prices, currency: r.Currency, submission: r.Submission, pending: r.Start, gb: float64(r.MemoryMB) / 1024, now: r.Now}
	if r.Now != nil {
		t.last = r.Now()
	}
	return context.WithValue(ctx, key{}, t)
}

func from(ctx context.Context) *Tally {
	t, _ := ctx.Value(key{}).(*Tally)
	return t
}

// Add reports usage in ctx's run (no-op without a Tally). Write units are
// first set against what Fold charged ahead.
func Add(ctx context.Context, o contracts.Orchestration) {
	t := from(ctx)
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.DynamoWriteUnits > t.largest {
		t.largest = o.DynamoWriteUnits
	}
	absorbed := min(t.ahead, o.DynamoWriteUnits)
	t.ahead -= absorbed
	o.DynamoWriteUnits -= absorbed
	add(&t.pending, o)
}

func add(dst *contracts.Orchestration, o contracts.Orchestration) {
	dst.DynamoWriteUnits += o.DynamoWriteUnits
	dst.DynamoReadUnits += o.DynamoReadUnits
	dst.QueueRequests += o.QueueRequests
	dst.BlobPuts += o.BlobPuts
	dst.BlobGets += o.BlobGets
	dst.Invocations += o.Invocations
	dst.LambdaGBSeconds += o.LambdaGBSeconds
}

// elapsed moves the run's duration since the last take into pending.
func (t *Tally) elapsed() {
	if t.now == nil || t.gb <= 0 {
		return
	}
	now := t.now()
	if d := now.Sub(t.last); d > 0 {
		t.pending.LambdaGBSeconds += d.Seconds() * t.gb
	}
	t.last = now
}

// Carry hands the run's usage so far on to the message it sends for
// submission (nil: no tally, another turn's message, or nothing to carry):
// the next run starts from it.
func Carry(ctx context.Context, submission string) *contracts.Orchestration {
	t := from(ctx)
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.submission == "" {
		t.submission = submission // an API request starting a turn
	}
	if t.submission != submission {
		return nil
	}
	t.elapsed()
	o := t.pending
	t.pending = contracts.Orchestration{}
	if o == (contracts.Orchestration{}) {
		return nil
	}
	return &o
}

// Fold records the run's usage (with an estimate of the write about to
// be made) in sub — the turn's terminal record, or one that waits without
// a message (parked, cancel requested) — and prices it; it returns
// undo, which gives the usage back to the run when the write does not
// happen. No tally, or another turn's record: nothing changes.
func Fold(ctx context.Context, sub *contracts.Submission) (undo func()) {
	t := from(ctx)
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.submission != "" && t.submission != sub.ID {
		return func() {}
	}
	before, last, ahead := t.pending, t.last, t.ahead
	t.elapsed()
	took := t.pending
	est := max(t.largest, 1)
	took.DynamoWriteUnits += est
	t.pending, t.ahead = contracts.Orchestration{}, t.ahead+est

	var o contracts.Orchestration // copies: cur and next share pointers
	if sub.Orchestration != nil {
		o = *sub.Orchestration
	}
	add(&o, took)
	sub.Orchestration = &o
	var c contracts.Cost
	if sub.Cost != nil {
		c = *sub.Cost
	} else {
		c.Currency = t.currency
	}
	c.Orchestration = t.prices.Price(o)
	c.AWSPrices = t.prices.Date
	sub.Cost = &c
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		add(&t.pending, before) // the duration is measured again from last
		t.ahead, t.last = ahead, last
	}
}
