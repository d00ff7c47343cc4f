package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
)

// CancelTimeout bounds the cancel a Client sends for a mutating call whose
// caller stopped it: a few seconds on a fresh context, best effort.
const CancelTimeout = 5 * time.Second

// When to stop a call in the sandbox. sandboxd runs a mutating call to the
// end even when its client goes away, so that its outcome is recorded
// (effect-once). So a Client tells it explicitly, with POST /v1/cancel,
// when the caller's context of a mutating call with a CallID is
// *cancelled* (context.Canceled) while the call is in flight, and returns
// the context's error once sandboxd has stopped the call (or after
// CancelTimeout). A cancellation means "stop": the turn was cancelled
// (turn.ErrCancelled), its lease was lost to another holder — who re-issues
// the call under the same id and gets the recorded "cancelled" outcome
// instead of a second run; a turn's cancel may also surface first as a lost
// lease, so the two are not told apart — or the process is shutting down.
// A *deadline* (context.DeadlineExceeded: a Lambda's own deadline coming
// near, the call's own Timeout) only means the caller can wait no longer:
// no cancel is sent, the call runs on to its own timeout and its outcome is
// recorded, for the redelivered handler to find under the same id. Calls
// without a CallID cannot be named, so they are never cancelled this way.

// CancelCall asks sandboxd to stop the mutating call callID (POST
// /v1/cancel) and waits until it has ended: a command's process group is
// killed and the call's recorded outcome is "cancelled" (a command's
// result has exit code -1 and local.CancelMarker as the last line of its
// stderr), so a repeat with the same id never runs it. stopped reports
// whether the call was running there; an unknown or finished id is nothing
// to do. It is retried like a read.
func (c *Client) CancelCall(ctx context.Context, callID string) (stopped bool, err error) {
	if callID == "" {
		return false, fmt.Errorf("remote sandbox: cancel: empty call id: %w", contracts.ErrInvalid)
	}
	body, err := json.Marshal(proto.CancelRequest{ID: callID})
	if err != nil {
		return false, fmt.Errorf("remote sandbox cancel: encoding the request: %v: %w", err, contracts.ErrInvalid)
	}
	var out proto.CancelResult
	if err := c.do(ctx, request{name: "cancel", method: http.MethodPost, path: proto.PathCancel, body: body, retry: retryAll, timeout: c.timeout}, &out); err != nil {
		return false, err
	}
	return out.Stopped, nil
}

// stopped is the error of a mutating call that failed with err: when the
// caller's ctx was cancelled (not a deadline; see above) and the request
// carries callID, the call is first stopped in the sandbox, best effort.
// The error keeps matching context.Canceled and says what the cancel did.
func (c *Client) stopped(ctx context.Context, callID string, err error) error {
	if err == nil || callID == "" || !errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		err = fmt.Errorf("%w (%v)", err, cause)
	}
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), CancelTimeout)
	defer cancel()
	if _, cerr := c.CancelCall(stop, callID); cerr != nil {
		return fmt.Errorf("%w; stopping it in the sandbox failed: %v", err, cerr)
	}
	return fmt.Errorf("%w; stopped in the sandbox", err)
}
