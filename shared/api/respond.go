package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

// fail maps a port error to a status: sentinels to 4xx, anything else to a
// logged 500 with a generic message.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	b, status := s.errorOf(r, err)
	writeJSON(w, status, b)
}

// errorOf is err's JSON error body and status (a 500 logged, its message
// generic).
func (s *server) errorOf(r *http.Request, err error) (errorBody, int) {
	status, code := classify(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		s.Log.ErrorContext(r.Context(), "api request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		msg = "internal error"
	}
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	return b, status
}

// classify maps a port error's sentinel to a status and error code.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, contracts.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, contracts.ErrInvalid):
		return http.StatusBadRequest, "invalid_request"
	case errors.Is(err, contracts.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, contracts.ErrConflict), errors.Is(err, contracts.ErrExists):
		return http.StatusConflict, "conflict"
	case errors.Is(err, contracts.ErrUnavailable):
		return http.StatusBadGateway, "upstream_unavailable"
	case errors.Is(err, contracts.ErrPermission):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, contracts.ErrNotAcceptable):
		return http.StatusNotAcceptable, "not_acceptable"
	}
	return http.StatusInternalServerError, "internal"
}

// decode reads exactly one JSON object with no unknown fields from a body
// of at most MaxBody bytes, refusing what checkBody refuses (null and
// non-object bodies, invalid UTF-8, null fields).
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("request body over %d bytes: %w", MaxBody, contracts.ErrTooLarge)
		}
		return fmt.Errorf("reading request body: %v: %w", err, contracts.ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %v: %w", err, contracts.ErrInvalid)
	}
	if dec.More() {
		return fmt.Errorf("request body: trailing data after the JSON object: %w", contracts.ErrInvalid)
	}
	return checkBody(body, v)
}

// jsonErrors rewrites the mux's plain-text 404/405 into JSON errors.
func jsonErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&errorWriter{ResponseWriter: w}, r)
	})
}

type errorWriter struct {
	http.ResponseWriter
	rewrote bool
}

func (e *errorWriter) WriteHeader(code int) {
	if (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) && e.Header().Get("Content-Type") == "text/plain; charset=utf-8" {
		e.rewrote = true
		if code == http.StatusNotFound {
			writeError(e.ResponseWriter, code, "not_found", "no such route")
		} else {
			writeError(e.ResponseWriter, code, "method_not_allowed", "method not allowed on this route")
		}
		return
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *errorWriter) Write(b []byte) (int, error) {
	if e.rewrote {
		return len(b), nil
	}
	return e.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (an
// event stream's write deadlines and flushes).
func (e *errorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

func (e *errorWriter) Flush() {
	if f, ok := e.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
