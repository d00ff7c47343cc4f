package lambdafn

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Visibility defaults (see Visibility).
const (
	DefaultHold       = 30 * time.Second
	DefaultHoldEvery  = 10 * time.Second
	DefaultBackoffMin = 2 * time.Second
	DefaultBackoffMax = 5 * time.Minute
)

// Visibility keeps the records of a batch hidden only briefly, so that a
// crash, a timeout or a handler failure delays the session's next delivery
// by seconds, not by the queue's visibility timeout (at least the function
// timeout, which Lambda requires; 6× it in cairn's stack). Without it a
// killed invocation's message stays in flight for the full visibility
// timeout, and since the FIFO message group is the session, nothing else of
// that session — repair's re-drive included — is delivered meanwhile.
//
//   - When the batch arrives, every record is hidden for Hold.
//   - While a record is being handled, the records not yet done are hidden
//     for Hold again every Every (a heartbeat; Hold > Every).
//   - A failed record, and every later one, is hidden for a backoff that
//     doubles with its receive count (BackoffMin … BackoffMax) before the
//     batch item failures are returned; a batch cut short by the deadline
//     is made visible at once.
//
// The journal stays the truth: a redelivered message whose turn is still
// leased by a live holder stops at once, and one whose holder died finds
// the lease lapsed within the lease TTL (or repair re-drives the turn).
type Visibility struct {
	Queue      contracts.VisibilitySetter // the queue adapter (SQS)
	Name       string                     // the queue's name ("model", …); default: the handler's kind
	Hold       time.Duration              // default DefaultHold
	Every      time.Duration              // default DefaultHoldEvery
	BackoffMin time.Duration              // default DefaultBackoffMin
	BackoffMax time.Duration              // default DefaultBackoffMax
	// Ticks, when set, replaces the heartbeat ticker (tests).
	Ticks func(every time.Duration) (<-chan time.Time, func())
}

// An Option configures SQSHandler.
type Option func(*handlerConfig)

type handlerConfig struct {
	vis      *Visibility
	coalesce func(contracts.Message) string
}

// Coalesce makes SQSHandler handle, of a batch's records whose messages
// share a non-empty key(m), only the last: the earlier ones are
// acknowledged unhandled, because handling the last does their work too.
// A workflow run's wake-ups are such records (workflow.WakeKey): one
// evaluation after the last sees every result the earlier ones announced,
// where ten in a row re-read the run's nodes ten times. A record that
// fails still fails with every later one.
func Coalesce(key func(contracts.Message) string) Option {
	return func(c *handlerConfig) { c.coalesce = key }
}

// WithVisibility makes SQSHandler keep its records briefly hidden (see
// Visibility). A queue that is not a contracts.VisibilitySetter (or nil)
// leaves the option off.
func WithVisibility(q any, v Visibility) Option {
	return func(c *handlerConfig) {
		vs, ok := q.(contracts.VisibilitySetter)
		if !ok || vs == nil {
			return
		}
		v.Queue = vs
		c.vis = &v
	}
}

func (v *Visibility) defaults(kind string) {
	if v.Name == "" {
		v.Name = kind
	}
	if v.Hold <= 0 {
		v.Hold = DefaultHold
	}
	if v.Every <= 0 || v.Every >= v.Hold {
		v.Every = min(DefaultHoldEvery, v.Hold/3)
	}
	if v.BackoffMin <= 0 {
		v.BackoffMin = DefaultBackoffMin
	}
	if v.BackoffMax < v.BackoffMin {
		v.BackoffMax = max(DefaultBackoffMax, v.BackoffMin)
	}
}

// set hides records for d; a failure is logged, never fatal (the record
// then keeps the visibility it had).
func (v *Visibility) set(ctx context.Context, log *slog.Logger, records []events.SQSMessage, d time.Duration) {
	for _, rec := range records {
		if err := v.Queue.SetVisibility(ctx, v.Name, rec.ReceiptHandle, d); err != nil {
			log.WarnContext(ctx, "setting a message's visibility", "message_id", rec.MessageId, "visibility", d, "error", err)
		}
	}
}

// backoff is how long a failed record with the given receive count stays
// hidden: BackoffMin doubled per earlier receive, at most BackoffMax.
func (v *Visibility) backoff(receiveCount string) time.Duration {
	n, err := strconv.Atoi(receiveCount)
	if err != nil || n < 1 {
		n = 1
	}
	d := v.BackoffMin
	for i := 1; i < n && d < v.BackoffMax; i++ {
		d *= 2
	}
	return min(d, v.BackoffMax)
}

// keeper re-hides the records from index from onwards every Every until
// stopped.
type keeper struct {
	mu   sync.Mutex
	from int
	stop func()
	done chan struct{}
}

func (v *Visibility) keep(ctx context.Context, log *slog.Logger, records []events.SQSMessage) *keeper {
	k := &keeper{done: make(chan struct{})}
	var ticks <-chan time.Time
	stopTicks := func() {}
	if v.Ticks != nil {
		ticks, stopTicks = v.Ticks(v.Every)
	} else {
		t := time.NewTicker(v.Every)
		ticks, stopTicks = t.C, t.Stop
	}
	quit := make(chan struct{})
	k.stop = sync.OnceFunc(func() { close(quit); <-k.done })
	go func() {
		defer close(k.done)
		defer stopTicks()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-ticks:
				k.mu.Lock()
				from := k.from
				k.mu.Unlock()
				v.set(ctx, log, records[from:], v.Hold)
			}
		}
	}()
	return k
}

// done marks records before i as finished (no longer kept hidden).
func (k *keeper) advance(i int) {
	k.mu.Lock()
	k.from = i
	k.mu.Unlock()
}
