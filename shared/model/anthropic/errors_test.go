package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/retry"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

func TestTurnErrors(t *testing.T) {
	ok := textAnswer(15, 4, "All ", "good.")
	for _, tc := range []struct {
		name     string
		first    func(w http.ResponseWriter) // the first reply; later ones answer ok
		phase    contracts.Phase
		failures int // handler runs redelivered
		requests int
		waits    int
		reason   string // prefix of Sub.Error when FAILED
	}{
		{
			name: "overloaded error event before output is retried",
			first: func(w http.ResponseWriter) {
				stream(w, messageStart("msg_a", 15), ping(), errorEvent("overloaded_error", "Overloaded"))
			},
			phase: contracts.PhaseCommitted, requests: 2, waits: 1,
		},
		{
			name:  "529 overloaded is retried",
			first: func(w http.ResponseWriter) { apiError(w, 529, "overloaded_error", "Overloaded") },
			phase: contracts.PhaseCommitted, requests: 2, waits: 1,
		},
		{
			name: "api error event after output breaks the stream",
			first: func(w http.ResponseWriter) {
				stream(w, messageStart("msg_b", 15), textStart(0), textDelta(0, "All "), errorEvent("api_error", "Internal server error"))
			},
			phase: contracts.PhaseCommitted, failures: 1, requests: 2,
		},
		{
			name: "400 invalid request fails the turn",
			first: func(w http.ResponseWriter) {
				apiError(w, 400, "invalid_request_error", "messages: text content blocks must be non-empty")
			},
			phase: contracts.PhaseFailed, requests: 1, reason: "model_error:",
		},
		{
			name: "invalid request error event fails the turn",
			first: func(w http.ResponseWriter) {
				stream(w, messageStart("msg_c", 15), errorEvent("invalid_request_error", "prompt is too long"))
			},
			phase: contracts.PhaseFailed, requests: 1, reason: "model_error:",
		},
		{
			name:  "401 fails the turn without the key",
			first: func(w http.ResponseWriter) { apiError(w, 401, "authentication_error", "invalid x-api-key") },
			phase: contracts.PhaseFailed, requests: 1, reason: "model_error:",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(n int, _ request, w http.ResponseWriter) {
				if n == 0 {
					tc.first(w)
					return
				}
				stream(w, ok...)
			})
			res := enginetest.ModelTurn(t, f.client(), "claude-test", "status?")

			if res.Sub.Phase != tc.phase || res.Failures != tc.failures {
				t.Fatalf("phase %s (%q) after %d failures, want %s after %d", res.Sub.Phase, res.Sub.Error, res.Failures, tc.phase, tc.failures)
			}
			if n := len(f.requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d", n, tc.requests)
			}
			if w := f.recorded(); len(w) != tc.waits {
				t.Fatalf("waits %v, want %d", w, tc.waits)
			}
			if tc.phase == contracts.PhaseCommitted {
				if got := res.Transcript[len(res.Transcript)-1]; got != "assistant: text=All good." {
					t.Fatalf("transcript %q", res.Transcript)
				}
				if res.Sub.Usage != (contracts.Usage{InputTokens: 15, OutputTokens: 4}) {
					t.Fatalf("usage %+v", res.Sub.Usage)
				}
				return
			}
			if !strings.HasPrefix(res.Sub.Error, tc.reason) {
				t.Fatalf("reason %q, want prefix %q", res.Sub.Error, tc.reason)
			}
			if len(res.Transcript) != 0 {
				t.Fatalf("transcript %q: a failed turn moves no session head", res.Transcript)
			}
			journal, _ := json.Marshal(res.Sub)
			events, _ := json.Marshal(res.Events)
			if strings.Contains(string(journal)+string(events), testKey) {
				t.Fatal("the API key leaked into the journal or the events")
			}
		})
	}
}

func TestStreamErrorsNeverCarryTheKey(t *testing.T) {
	// A server echoing the key back (a hostile proxy) must not put it into
	// the error either.
	f := newFake(t, func(_ int, r request, w http.ResponseWriter) {
		apiError(w, 401, "authentication_error", "invalid key "+r.Header.Get("X-Api-Key"))
	})
	_, err := f.client().Stream(context.Background(), contracts.ModelRequest{Model: "claude-test",
		Messages: []contracts.Node{{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "hi"}}}}},
		func(contracts.ModelEvent) error { return nil })
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error %v", err)
	}
	var aerr *sdk.Error
	if !errors.Is(err, contracts.ErrInvalid) || !errors.As(err, &aerr) || aerr.StatusCode != 401 {
		t.Fatalf("error %v: want ErrInvalid wrapping the API error", err)
	}
}

func TestClassify(t *testing.T) {
	apiErr := func(status int, typ string, hdr ...string) error {
		f := newFake(t, func(_ int, _ request, w http.ResponseWriter) {
			if status == 200 {
				stream(w, messageStart("m", 1), errorEvent(typ, "x"))
				return
			}
			apiError(w, status, typ, "x", hdr...)
		})
		c := f.client()
		p, _ := newParams(contracts.ModelRequest{Model: "m"}, 10)
		_, err := c.once(context.Background(), p, testKey, func(contracts.ModelEvent) error { return nil })
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want retry.Failure
	}{
		{"429 with retry-after", apiErr(429, "rate_limit_error", "retry-after", "7"), retry.Failure{Retryable: true, RetryAfter: 7 * time.Second}},
		{"500", apiErr(500, "api_error"), retry.Failure{Retryable: true}},
		{"529", apiErr(529, "overloaded_error"), retry.Failure{Retryable: true}},
		{"400", apiErr(400, "invalid_request_error"), retry.Failure{Permanent: true}},
		{"403", apiErr(403, "permission_error"), retry.Failure{Permanent: true}},
		{"404", apiErr(404, "not_found_error"), retry.Failure{Permanent: true}},
		{"event overloaded", apiErr(200, "overloaded_error"), retry.Failure{Retryable: true}},
		{"event rate limit", apiErr(200, "rate_limit_error"), retry.Failure{Retryable: true}},
		{"event api error", apiErr(200, "api_error"), retry.Failure{Retryable: true}},
		{"event invalid request", apiErr(200, "invalid_request_error"), retry.Failure{Permanent: true}},
		{"event authentication", apiErr(200, "authentication_error"), retry.Failure{Permanent: true}},
		{"connection refused", fmt.Errorf("dial tcp: %w", errors.New("connection refused")), retry.Failure{Retryable: true}},
		{"incomplete stream", errIncomplete, retry.Failure{Retryable: true}},
		{"cancelled", fmt.Errorf("reading: %w", context.Canceled), retry.Failure{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			if got := classify(tc.err); got != tc.want {
				t.Fatalf("classify(%v) = %+v, want %+v", tc.err, got, tc.want)
			}
		})
	}
}

func TestNewChecksConfig(t *testing.T) {
	key := func(context.Context) (string, error) { return testKey, nil }
	for _, cfg := range []Config{
		{},
		{Key: key, BaseURL: "not a url"},
		{Key: key, BaseURL: "ftp://example.com"},
		{Key: key, MaxTokens: -1},
	} {
		if _, err := New(cfg); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", cfg, err)
		}
	}
	if _, err := New(Config{Key: key}); err != nil {
		t.Fatal(err)
	}
}

func TestKeyErrors(t *testing.T) {
	f := newFake(t, func(int, request, http.ResponseWriter) { t.Error("no request expected") })
	req := contracts.ModelRequest{Model: "claude-test"}
	for _, tc := range []struct {
		key     func(context.Context) (string, error)
		invalid bool
	}{
		{func(context.Context) (string, error) { return "", errors.New("secrets unavailable") }, false},
		{func(context.Context) (string, error) { return "", nil }, true},
	} {
		c, err := New(Config{Key: tc.key, BaseURL: f.srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Stream(context.Background(), req, func(contracts.ModelEvent) error { return nil })
		if err == nil || errors.Is(err, contracts.ErrInvalid) != tc.invalid {
			t.Fatalf("error %v, want invalid=%v", err, tc.invalid)
		}
	}
}
