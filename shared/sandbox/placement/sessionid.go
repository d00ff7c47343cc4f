package placement

import (
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// CheckSessionID accepts a session id that is safe as one path segment: 1–128
// characters of [A-Za-z0-9._-], not starting with a dot (so never ".", ".."
// or a hidden name). Providers that name a directory after the session
// (shared/sandbox/local, shared/sandbox/proc) check with it; anything else
// is an error wrapping contracts.ErrInvalid.
func CheckSessionID(id string) error {
	bad := id == "" || len(id) > 128 || id[0] == '.'
	for i := 0; i < len(id) && !bad; i++ {
		c := id[i]
		bad = !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if bad {
		return fmt.Errorf("session id %q is not a safe path segment: %w", id, contracts.ErrInvalid)
	}
	return nil
}
