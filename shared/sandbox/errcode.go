package sandbox

import (
	"errors"

	"github.com/cairnrun/cairn/shared/contracts"
)

// errorCodes name the sentinels a recorded call error keeps.
var errorCodes = []struct {
	code string
	err  error
}{
	{"not_found", contracts.ErrNotFound}, {"invalid", contracts.ErrInvalid},
	{"permission", contracts.ErrPermission}, {"timeout", contracts.ErrTimeout},
	{"too_large", contracts.ErrTooLarge}, {"conflict", contracts.ErrConflict},
	{"exists", contracts.ErrExists}, {"unavailable", contracts.ErrUnavailable},
}

func errorCode(err error) string {
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return "internal"
}

// codedError keeps a recorded message and the sentinel of its code.
type codedError struct {
	msg string
	err error
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.err }

func errorFor(code, msg string) error {
	for _, c := range errorCodes {
		if c.code == code {
			return &codedError{msg, c.err}
		}
	}
	return errors.New(msg)
}
