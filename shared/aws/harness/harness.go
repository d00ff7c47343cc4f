package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Defaults of a zero Function or Harness field.
const (
	DefaultBatchSize = 10
	DefaultTimeout   = 3 * time.Second // Lambda's default function timeout
	DefaultPoll      = 200 * time.Millisecond
)

// Function is one SQS-triggered Lambda function and its event source
// mapping.
type Function struct {
	Queue      string // queue name, e.g. "model" (for logs)
	URL        string // the queue URL
	BatchSize  int    // records per invocation, 1…10; 0 is DefaultBatchSize
	Visibility time.Duration
	// ReceiveHold, when set and shorter than Visibility, is the visibility
	// timeout a receive asks for: a handler that keeps its records hidden
	// itself (lambdafn.WithVisibility) re-hides them at once, and a receive
	// whose response was lost (the SDK retried it, the endpoint was slow)
	// then blocks its FIFO group for ReceiveHold, not for Visibility.
	ReceiveHold time.Duration
	// Handler is the function's handler, e.g. lambdafn.SQSHandler(…).
	Handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	// Timeout is the function timeout: the handler's ctx deadline. 0 is
	// DefaultTimeout.
	Timeout time.Duration
}

// Harness polls the functions' queues and invokes their handlers. Set its
// fields, then call Run or Once; do not copy it after first use.
type Harness struct {
	Client    *sqs.Client
	Functions []Function
	Log       *slog.Logger
	// Poll is the pause after an empty receive; 0 is DefaultPoll.
	Poll time.Duration

	invocations atomic.Int64
	arnMu       sync.Mutex
	arns        map[string]string // queue URL → ARN
}

// Invocations returns how many times a handler has been invoked.
func (h *Harness) Invocations() int64 { return h.invocations.Load() }

// Run polls every function's queue until ctx ends, one poller per
// function (like one concurrent invocation per mapping), and returns nil
// then. Receive errors are logged and retried after Poll.
func (h *Harness) Run(ctx context.Context) error {
	if len(h.Functions) == 0 {
		return errors.New("harness: no functions to run")
	}
	var wg sync.WaitGroup
	for _, fn := range h.Functions {
		wg.Go(func() { h.poll(ctx, fn) })
	}
	wg.Wait()
	return nil
}

func (h *Harness) poll(ctx context.Context, fn Function) {
	pause := h.Poll
	if pause <= 0 {
		pause = DefaultPoll
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		n, err := h.Once(ctx, fn)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.log().ErrorContext(ctx, "polling queue", "queue", fn.Queue, "error", err)
		}
		if n > 0 && err == nil {
			continue
		}
		t.Reset(pause)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *Harness) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

// validate checks a Function before its first receive.
func (fn Function) validate() error {
	if fn.URL == "" || fn.Handler == nil || fn.BatchSize < 0 || fn.BatchSize > 10 {
		return fmt.Errorf("harness: function for queue %q needs a URL, a handler and a batch size of 0…10", fn.Queue)
	}
	return nil
}
