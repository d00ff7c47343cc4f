package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Defaults applied to zero Policy fields.
const (
	DefaultAttempts = 4
	DefaultBase     = 500 * time.Millisecond
	DefaultMax      = 30 * time.Second
	DefaultTimeout  = 10 * time.Minute
)

// Policy bounds the retries of one model step.
type Policy struct {
	Attempts int           // total attempts, first included
	Base     time.Duration // first backoff; doubles each retry, ±50% jitter
	Max      time.Duration // cap of one wait (a longer Retry-After is honoured up to 2×Max)
	Timeout  time.Duration // per attempt, the whole stream included
	// Sleep waits d or until ctx ends (tests record the waits).
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p Policy) withDefaults() Policy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultAttempts
	}
	if p.Base <= 0 {
		p.Base = DefaultBase
	}
	if p.Max <= 0 {
		p.Max = DefaultMax
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

// Failure is what a provider says about one attempt's error.
type Failure struct {
	// Retryable: throttling (429), overload, 5xx, a connection that failed
	// before any response.
	Retryable bool
	// Permanent: the request can never succeed as sent (4xx other than
	// throttling: bad request, bad key, unknown model).
	Permanent bool
	// RetryAfter is the provider's requested wait, if it gave one.
	RetryAfter time.Duration
}

// Attempt streams once; emit forwards events to the caller.
type Attempt func(ctx context.Context, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error)

// Run makes attempts under p until one succeeds, output has started, the
// failure is not retryable, or the attempts are spent.
func Run(ctx context.Context, p Policy, classify func(error) Failure, emit func(contracts.ModelEvent) error, attempt Attempt) (contracts.ModelResponse, error) {
	p = p.withDefaults()
	var last error
	for n := 1; ; n++ {
		started := false
		actx, cancel := context.WithTimeout(ctx, p.Timeout)
		resp, err := attempt(actx, func(ev contracts.ModelEvent) error {
			started = true
			return emit(ev)
		})
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err == nil {
			if n > 1 {
				trace.SpanFromContext(ctx).SetAttributes(attribute.Int("cairn.model.retries", n-1))
			}
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		if timedOut {
			err = fmt.Errorf("model request exceeded its %s timeout: %w (%w)", p.Timeout, contracts.ErrTimeout, err)
		}
		if started {
			return resp, fmt.Errorf("model stream broke after output started (a new attempt will use a new stream): %w", err)
		}
		f := classify(err)
		if f.Permanent {
			return resp, fmt.Errorf("%w: %w", contracts.ErrInvalid, err)
		}
		last = err
		if !f.Retryable && !timedOut {
			return resp, err
		}
		if n >= p.Attempts {
			return resp, fmt.Errorf("model request failed after %d attempts: %w", n, last)
		}
		wait := p.wait(n, f.RetryAfter)
		// A retry is an event on the caller's span (the model call's).
		trace.SpanFromContext(ctx).AddEvent("cairn.model.retry", trace.WithAttributes(attribute.Int("cairn.model.attempt", n),
			attribute.Bool("cairn.model.timed_out", timedOut), attribute.Int64("cairn.model.backoff_ms", wait.Milliseconds())))
		if err := p.Sleep(ctx, wait); err != nil {
			return resp, err
		}
	}
}

// wait is the backoff before retry n (1-based): Base·2^(n-1) with ±50%
// jitter, capped at Max, but never less than retryAfter (itself capped at
// 2·Max so a hostile header cannot park a turn).
func (p Policy) wait(n int, retryAfter time.Duration) time.Duration {
	d := p.Base << (n - 1)
	if d > p.Max || d <= 0 {
		d = p.Max
	}
	d = time.Duration(float64(d) * (0.5 + rand.Float64()))
	if retryAfter > 2*p.Max {
		retryAfter = 2 * p.Max
	}
	return max(d, retryAfter)
}

// HTTP classifies an HTTP status (0 = no response: the connection failed)
// and its headers, the way every HTTP provider's errors are classified.
func HTTP(status int, h http.Header) Failure {
	f := Failure{RetryAfter: RetryAfter(h, time.Now())}
	switch {
	case status == 0, status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status == 409, status >= 500:
		f.Retryable = true
	case status >= 400:
		f.Permanent = true
	}
	return f
}

// RetryAfter reads Retry-After (seconds or an HTTP date) and the
// retry-after-ms extension some providers send; 0 when absent.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
