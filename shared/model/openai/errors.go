package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/cairnrun/cairn/shared/model/retry"
)

// HTTPError is a response with an error status. Its message is the
// server's, with the API key (should a server echo it) redacted.
type HTTPError struct {
	Status  int
	Header  http.Header
	Type    string // error.type, if the server sent one
	Code    string // error.code, if the server sent one
	Message string
	cause   error // the SDK's *openai.Error, when it could decode the body
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("chat completion request: HTTP %d %s%s", e.Status, http.StatusText(e.Status), detail(e.Type, e.Code, e.Message))
}

func (e *HTTPError) Unwrap() error { return e.cause }

// StreamError is an error object a server sent inside a 200 stream.
type StreamError struct {
	Type    string
	Code    string
	Message string
}

func (e *StreamError) Error() string {
	return "chat completion stream sent an error" + detail(e.Type, e.Code, e.Message)
}

// failure: throttling or a server-side fault may pass on a new attempt;
// anything else (a bad request, a content policy) will not.
func (e *StreamError) failure() retry.Failure {
	if n, err := strconv.Atoi(e.Code); err == nil {
		return retry.HTTP(n, nil)
	}
	kind := strings.ToLower(e.Type + " " + e.Code)
	for _, w := range []string{"rate_limit", "ratelimit", "rate limit", "too_many", "server", "internal", "overload", "unavailable", "timeout", "api_error"} {
		if strings.Contains(kind, w) {
			return retry.Failure{Retryable: true}
		}
	}
	return retry.Failure{Permanent: true}
}

func detail(typ, code, msg string) string {
	var tags []string
	for _, t := range []string{typ, code} {
		if t != "" {
			tags = append(tags, t)
		}
	}
	s := ""
	if len(tags) > 0 {
		s = " (" + strings.Join(tags, ", ") + ")"
	}
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// classify is the retry.Run classifier (describe has turned the SDK's
// *openai.Error into an HTTPError): an HTTP status decides through
// retry.HTTP (Retry-After and retry-after-ms honoured); an error object in
// the stream by its type/code; anything else happened before a response or
// cut the stream, and is retryable.
func classify(err error) retry.Failure {
	var se *StreamError
	if errors.As(err, &se) {
		return se.failure()
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return retry.HTTP(he.Status, he.Header)
	}
	return retry.HTTP(0, nil)
}

// describe turns an SDK error into an HTTPError or a StreamError where it
// can, and keeps the key out of every message. res is the raw response, if
// one arrived.
func describe(err error, res *http.Response, key string) error {
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return streamError(se.Event.Data, key)
	}
	var ae *oai.Error
	if errors.As(err, &ae) {
		he := &HTTPError{Status: ae.StatusCode, Type: ae.Type, Code: ae.Code, Message: ae.Message, cause: ae}
		if ae.Response != nil {
			he.Header = ae.Response.Header
			if he.Message == "" {
				he.Message = bodyMessage(ae.Response)
			}
		}
		he.Message = redact(he.Message, key)
		return he
	}
	if res != nil && res.StatusCode >= 400 {
		// The SDK could not decode the body (vLLM puts message and type at
		// the top level, not under "error"); the status still decides.
		return &HTTPError{Status: res.StatusCode, Header: res.Header, Message: redact(bodyMessage(res), key)}
	}
	if key != "" && strings.Contains(err.Error(), key) {
		return &redacted{err: err, key: key}
	}
	return fmt.Errorf("chat completion stream: %w", err)
}

func streamError(data []byte, key string) *StreamError {
	var body struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return &StreamError{Message: redact(strings.TrimSpace(string(data)), key)}
	}
	code := strings.Trim(string(body.Error.Code), `"`)
	if code == "null" {
		code = ""
	}
	return &StreamError{Type: body.Error.Type, Code: code, Message: redact(body.Error.Message, key)}
}

// bodyMessage reads an error body's message: a top-level "message",
// "error" string or "detail", else the start of the text.
func bodyMessage(res *http.Response) string {
	if res.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
	var m struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Error   any    `json:"error"`
		Detail  any    `json:"detail"`
	}
	if json.Unmarshal(b, &m) == nil {
		switch {
		case m.Message != "" && m.Type != "":
			return m.Type + ": " + m.Message
		case m.Message != "":
			return m.Message
		case m.Error != nil:
			if e, ok := m.Error.(string); ok {
				return e
			}
		case m.Detail != nil:
			return fmt.Sprint(m.Detail)
		}
	}
	return strings.TrimSpace(string(b[:min(len(b), 300)]))
}

func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// redacted hides the key in an error's text and keeps its chain.
type redacted struct {
	err error
	key string
}

func (r *redacted) Error() string { return "chat completion stream: " + redact(r.err.Error(), r.key) }
func (r *redacted) Unwrap() error { return r.err }
