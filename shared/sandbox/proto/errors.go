package proto

import (
	"context"
	"errors"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Wire error codes. Each maps to one HTTP status and, except internal, one
// sentinel: a contracts one, or context.Canceled for cancelled (see the
// package documentation).
const (
	CodeNotFound     = "not_found"
	CodeInvalid      = "invalid"
	CodePermission   = "permission"
	CodeUnauthorized = "unauthorized"
	CodeTimeout      = "timeout"
	CodeTooLarge     = "too_large"
	CodeConflict     = "conflict"
	CodeExists       = "exists"
	CodeUnavailable  = "unavailable"
	CodeCancelled    = "cancelled"
	CodeInternal     = "internal"
)

// codes is the table behind Code, Err and Status. Order matters for Code:
// the first sentinel an error matches wins.
var codes = []struct {
	code     string
	status   int
	sentinel error
}{
	{CodeNotFound, http.StatusNotFound, contracts.ErrNotFound},
	{CodeInvalid, http.StatusBadRequest, contracts.ErrInvalid},
	{CodePermission, http.StatusForbidden, contracts.ErrPermission},
	{CodeTimeout, http.StatusGatewayTimeout, contracts.ErrTimeout},
	{CodeTooLarge, http.StatusRequestEntityTooLarge, contracts.ErrTooLarge},
	{CodeConflict, http.StatusConflict, contracts.ErrConflict},
	{CodeExists, http.StatusConflict, contracts.ErrExists},
	{CodeUnavailable, http.StatusServiceUnavailable, contracts.ErrUnavailable},
	{CodeCancelled, http.StatusConflict, context.Canceled},
	// Decode-only: no error is given this code by sentinel.
	{CodeUnauthorized, http.StatusUnauthorized, contracts.ErrPermission},
	{CodeInternal, http.StatusInternalServerError, nil},
}

// Code returns the wire code and HTTP status for err: an *Error keeps its
// own code; otherwise the first contracts sentinel err matches (errors.Is)
// decides, context.Canceled is "cancelled", context.DeadlineExceeded is
// "timeout", and anything else is "internal" (500). Code(nil) is ("", 200).
//
// The call ledger records contracts.CallError.Code with Code, so a recorded
// failure decodes with Err to the same sentinel.
func Code(err error) (code string, status int) {
	if err == nil {
		return "", http.StatusOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code, Status(e.Code)
	}
	for _, c := range codes {
		if c.sentinel != nil && c.code != CodeUnauthorized && errors.Is(err, c.sentinel) {
			return c.code, c.status
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return CodeTimeout, http.StatusGatewayTimeout
	}
	return CodeInternal, http.StatusInternalServerError
}

// Status is the HTTP status of a wire code (500 for an unknown one).
func Status(code string) int {
	for _, c := range codes {
		if c.code == code {
			return c.status
		}
	}
	return http.StatusInternalServerError
}

// Sentinel is the sentinel of a wire code (a contracts one, or
// context.Canceled for "cancelled"): nil for "internal" and for unknown
// codes.
func Sentinel(code string) error {
	for _, c := range codes {
		if c.code == code {
			return c.sentinel
		}
	}
	return nil
}

// Err returns the error a wire code and message stand for: its text is
// message and it matches the code's sentinel with errors.Is (so
// errors.Is(Err("not_found", m), contracts.ErrNotFound)). "unauthorized"
// matches contracts.ErrPermission; "internal" and unknown codes match no
// sentinel. The result is an *Error.
func Err(code, message string) error {
	return &Error{Code: code, Message: message}
}

// Error is a decoded wire error. It unwraps to the sentinel of its code.
type Error struct {
	Code    string
	Message string
}

// Error returns the message (the code when the message is empty).
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Message
}

// Unwrap returns the sentinel of the code, or nil.
func (e *Error) Unwrap() error { return Sentinel(e.Code) }
