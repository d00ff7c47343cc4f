package retry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairnrun/cairn/shared/contracts"
)

var errThrottled = errors.New("429 throttled")
var errBad = errors.New("400 bad request")
var errCut = errors.New("stream cut")

func classify(err error) Failure {
	switch {
	case errors.Is(err, errThrottled):
		return Failure{Retryable: true, RetryAfter: 3 * time.Second}
	case errors.Is(err, errBad):
		return Failure{Permanent: true}
	}
	return Failure{Retryable: true}
}

// script plays one outcome per attempt: an error before output, an error
// after one event, or success.
type script struct {
	outcomes []string
	calls    int
}

func (s *script) attempt(ctx context.Context, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	o := s.outcomes[s.calls]
	s.calls++
	switch o {
	case "throttle":
		return contracts.ModelResponse{}, errThrottled
	case "bad":
		return contracts.ModelResponse{}, errBad
	case "cut":
		if err := emit(contracts.ModelEvent{Type: contracts.ModelText, Text: "half"}); err != nil {
			return contracts.ModelResponse{}, err
		}
		return contracts.ModelResponse{}, errCut
	case "fail":
		return contracts.ModelResponse{}, errors.New("503 unavailable")
	case "hang":
		<-ctx.Done()
		return contracts.ModelResponse{}, ctx.Err()
	}
	_ = emit(contracts.ModelEvent{Type: contracts.ModelText, Text: "ok"})
	return contracts.ModelResponse{Text: "ok"}, nil
}

func run(t *testing.T, p Policy, outcomes ...string) (contracts.ModelResponse, error, *script, []time.Duration) {
	t.Helper()
	var waits []time.Duration
	p.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	s := &script{outcomes: outcomes}
	resp, err := Run(context.Background(), p, classify, func(contracts.ModelEvent) error { return nil }, s.attempt)
	return resp, err, s, waits
}

func TestThrottledThenSuccessHonoursRetryAfter(t *testing.T) {
	resp, err, s, waits := run(t, Policy{Base: 10 * time.Millisecond}, "throttle", "throttle", "ok")
	if err != nil || resp.Text != "ok" || s.calls != 3 {
		t.Fatalf("%+v %v after %d calls", resp, err, s.calls)
	}
	for _, w := range waits {
		if w < 3*time.Second {
			t.Fatalf("waited %s, less than Retry-After 3s", w)
		}
	}
}

func TestNoRetryOnceOutputStarted(t *testing.T) {
	_, err, s, _ := run(t, Policy{}, "cut", "ok")
	if !errors.Is(err, errCut) || s.calls != 1 || errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("%v after %d calls: want the cut returned, no retry", err, s.calls)
	}
}

func TestPermanentIsInvalid(t *testing.T) {
	_, err, s, _ := run(t, Policy{}, "bad", "ok")
	if !errors.Is(err, contracts.ErrInvalid) || s.calls != 1 {
		t.Fatalf("%v after %d calls", err, s.calls)
	}
}

func TestAttemptsAreBounded(t *testing.T) {
	_, err, s, waits := run(t, Policy{Attempts: 3, Base: time.Millisecond}, "fail", "fail", "fail", "ok")
	if err == nil || s.calls != 3 || len(waits) != 2 {
		t.Fatalf("%v after %d calls, %d waits", err, s.calls, len(waits))
	}
	for i, w := range waits {
		base := time.Millisecond << i
		if w < base/2 || w > base*3/2 {
			t.Fatalf("wait %d = %s, want %s ±50%%", i, w, base)
		}
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	resp, err, s, _ := run(t, Policy{Timeout: 20 * time.Millisecond}, "hang", "ok")
	if err != nil || resp.Text != "ok" || s.calls != 2 {
		t.Fatalf("%+v %v after %d calls", resp, err, s.calls)
	}
	_, err, _, _ = run(t, Policy{Timeout: 20 * time.Millisecond, Attempts: 1}, "hang")
	if !errors.Is(err, contracts.ErrTimeout) {
		t.Fatalf("a timed-out attempt: %v, want ErrTimeout", err)
	}
}

func TestCancelledContextStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &script{outcomes: []string{"throttle", "ok"}}
	p := Policy{Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }}
	if _, err := Run(ctx, p, classify, func(contracts.ModelEvent) error { return nil }, s.attempt); !errors.Is(err, context.Canceled) || s.calls != 1 {
		t.Fatalf("%v after %d calls", err, s.calls)
	}
}

func TestHTTPClassification(t *testing.T) {
	cases := []struct {
		status           int
		retry, permanent bool
	}{
		{0, true, false}, {429, true, false}, {500, true, false}, {503, true, false}, {529, true, false},
		{400, false, true}, {401, false, true}, {403, false, true}, {404, false, true}, {200, false, false},
	}
	for _, c := range cases {
		f := HTTP(c.status, nil)
		if f.Retryable != c.retry || f.Permanent != c.permanent {
			t.Errorf("%d: %+v", c.status, f)
		}
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"Retry-After: 7":                             7 * time.Second,
		"Retry-After: 1.5":                           1500 * time.Millisecond,
		"Retry-After-Ms: 250":                        250 * time.Millisecond,
		"Retry-After: Sun, 29 Nov 2026 12:00:10 GMT": 10 * time.Second,
		"Retry-After: soon":                          0,
		"Retry-After: -3":                            0,
	} {
		k, v, _ := cut(h)
		if got := RetryAfter(http.Header{http.CanonicalHeaderKey(k): {v}}, now); got != want {
			t.Errorf("%s: %s, want %s", h, got, want)
		}
	}
	if w := (Policy{Max: time.Second}).withDefaults().wait(1, time.Hour); w != 2*time.Second {
		t.Errorf("a huge Retry-After is capped at 2×Max: %s", w)
	}
}

func cut(h string) (string, string, bool) {
	for i := 0; i+1 < len(h); i++ {
		if h[i] == ':' && h[i+1] == ' ' {
			return h[:i], h[i+2:], true
		}
	}
	return h, "", false
}

// TestRetriesAreSpanEvents: each retry is an event on the caller's span,
// and a call that succeeded after retries says how many.
func TestRetriesAreSpanEvents(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	ctx, span := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t").Start(context.Background(), "model")
	s := &script{outcomes: []string{"throttle", "fail", "ok"}}
	p := Policy{Base: time.Millisecond, Sleep: func(context.Context, time.Duration) error { return nil }}
	if _, err := Run(ctx, p, classify, func(contracts.ModelEvent) error { return nil }, s.attempt); err != nil {
		t.Fatal(err)
	}
	span.End()
	got := rec.Ended()[0]
	var attempts []int64
	for _, ev := range got.Events() {
		if ev.Name == "cairn.model.retry" {
			for _, kv := range ev.Attributes {
				if kv.Key == "cairn.model.attempt" {
					attempts = append(attempts, kv.Value.AsInt64())
				}
			}
		}
	}
	if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
		t.Fatalf("retry events for attempts %v, want [1 2]", attempts)
	}
	found := false
	for _, kv := range got.Attributes() {
		if kv.Key == "cairn.model.retries" && kv.Value.AsInt64() == 2 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no cairn.model.retries=2 on the span: %v", got.Attributes())
	}
}
