package openai

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/model/retry"
)

func TestClassify(t *testing.T) {
	h := http.Header{"Retry-After": {"3"}}
	cases := []struct {
		name string
		err  error
		want retry.Failure
	}{
		{"429 with Retry-After", &HTTPError{Status: 429, Header: h}, retry.Failure{Retryable: true, RetryAfter: 3 * time.Second}},
		{"500", &HTTPError{Status: 500}, retry.Failure{Retryable: true}},
		{"400", &HTTPError{Status: 400}, retry.Failure{Permanent: true}},
		{"403", &HTTPError{Status: 403}, retry.Failure{Permanent: true}},
		{"connection cut", describe(io.ErrUnexpectedEOF, nil, ""), retry.Failure{Retryable: true}},
		{"stream rate limit", &StreamError{Type: "tokens", Code: "rate_limit_exceeded"}, retry.Failure{Retryable: true}},
		{"stream server error", &StreamError{Type: "server_error"}, retry.Failure{Retryable: true}},
		{"stream overloaded (LiteLLM passing Anthropic through)", &StreamError{Type: "overloaded_error"}, retry.Failure{Retryable: true}},
		{"stream vLLM internal", &StreamError{Type: "InternalServerError", Code: "500"}, retry.Failure{Retryable: true}},
		{"stream 429 code", &StreamError{Code: "429"}, retry.Failure{Retryable: true}},
		{"stream bad request", &StreamError{Type: "invalid_request_error"}, retry.Failure{Permanent: true}},
		{"stream without type", &StreamError{Message: "boom"}, retry.Failure{Permanent: true}},
	}
	for _, tc := range cases {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDescribeRedactsTheKey(t *testing.T) {
	const key = "sk-secret-123"
	err := describe(errors.New(`Post "http://u:`+key+`@proxy/v1/chat/completions": dial tcp: refused`), nil, key)
	if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error %q", err)
	}
	se := streamError([]byte("not json "+key), key)
	if strings.Contains(se.Error(), key) {
		t.Fatalf("error %q", se)
	}
	if errors.Unwrap(err) == nil {
		t.Fatal("the redacted error lost its cause")
	}
}
