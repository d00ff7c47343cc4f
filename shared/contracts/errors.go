package contracts

import "errors"

// Sentinel errors shared by every port. Adapters wrap them with context
// (fmt.Errorf("...: %w", ErrConflict)); callers match with errors.Is.
var (
	// ErrConflict: a conditional write lost (version moved, lease held by
	// another owner, or a create-if-absent found different content).
	ErrConflict = errors.New("conflict")
	// ErrNotFound: the addressed record, file or queue entry does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the input is malformed or violates a schema or rule.
	ErrInvalid = errors.New("invalid input")
	// ErrPermission: the operation is refused (path outside the workspace,
	// wrong token, policy deny).
	ErrPermission = errors.New("permission denied")
	// ErrTimeout: the operation exceeded its deadline.
	ErrTimeout = errors.New("timeout")
	// ErrTooLarge: a payload exceeds a size limit.
	ErrTooLarge = errors.New("too large")
	// ErrNotAcceptable: the response the request asks for cannot be made
	// here (an event stream where responses are delivered whole).
	ErrNotAcceptable = errors.New("not acceptable")
	// ErrExists: a create found the target already present.
	ErrExists = errors.New("already exists")
	// ErrUnavailable: a dependency (a sandbox, a remote endpoint) could not
	// be reached or is gone.
	ErrUnavailable = errors.New("unavailable")
	// ErrPending: the work is under way elsewhere (a tool waiting for a
	// workflow run): the turn parks and is woken when it ends.
	ErrPending = errors.New("pending")
)
