package local

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A mutating call with a CallID can be stopped by its id as well as by its
// context: CancelCall is what sandboxd's POST /v1/cancel runs, because
// sandboxd runs a mutating call under a context that ignores its client
// going away (a client that merely went away must not kill it). The
// difference from a context that ends: a call stopped by CancelCall has a
// recorded outcome — it was cancelled — so a repeat with the same id
// returns that outcome and never runs it; a call whose context ended stays
// unknown.

// errCancelRequested is the cause of a call's context when CancelCall
// stopped it.
var errCancelRequested = errors.New("the call was cancelled")

// CancelMarker is the last line of the stderr of a command that CancelCall
// stopped (its result: exit code -1, not timed out).
const CancelMarker = "[cancelled: stopped by a cancel request; its process group was killed]"

// inflight is one call CancelCall can stop.
type inflight struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once the call returned and its outcome is recorded
}

// maxOvertaken bounds how many ids of cancels that found no running call
// a sandbox remembers.
const maxOvertaken = 1024

// inflights is the set of running calls by call id (a slice per id: a
// sandbox without a ledger may run two calls of one id at once), and the
// ids cancelled while not running: a cancel may overtake its call (the
// client gave up while its request was still on the way), and that call
// must then not run when it arrives.
type inflights struct {
	mu        sync.Mutex
	m         map[string][]*inflight
	overtaken map[string]bool
	order     []string // overtaken ids, oldest first
}

func newInflights() *inflights {
	return &inflights{m: map[string][]*inflight{}, overtaken: map[string]bool{}}
}

// track registers a call of callID now running in this sandbox. The
// returned context is cancelled with errCancelRequested by CancelCall (at
// once if a cancel of callID came first); the caller calls end once the
// call returned and its outcome is recorded (and its ledger lock released,
// so that CallOutcome answers "done" by then).
func (l *Sandbox) track(ctx context.Context, callID string) (_ context.Context, end func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &inflight{cancel: cancel, done: make(chan struct{})}
	r := l.running
	r.mu.Lock()
	r.m[callID] = append(r.m[callID], c)
	if r.overtaken[callID] {
		cancel(errCancelRequested)
	}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		if rest := slices.DeleteFunc(r.m[callID], func(x *inflight) bool { return x == c }); len(rest) > 0 {
			r.m[callID] = rest
		} else {
			delete(r.m, callID)
		}
		r.mu.Unlock()
		close(c.done)
		cancel(nil)
	}
}

// CancelCall stops the mutating call callID if it runs in this sandbox now:
// its context is cancelled — a command's process group is killed, as when
// the context of Exec ends — and the call ends with a recorded outcome
// saying so: a command's result has exit code -1 and CancelMarker as the
// last line of its stderr; another method fails with a "cancelled" error
// (matching context.Canceled). A repeat with the same id returns that
// outcome and never runs the call again.
//
// It returns once the call has returned and its outcome is recorded (or
// when ctx ends). running reports whether such a call was running here; an
// unknown or finished id, or a call running in another process on the same
// state directory, is nothing to do now (false, nil) — but the id is
// remembered (the latest maxOvertaken), so that a call of that id that
// arrives later, overtaken by its cancel, is not run: it ends cancelled at
// once. (A finished call keeps its recorded outcome.)
func (l *Sandbox) CancelCall(ctx context.Context, callID string) (running bool, err error) {
	if callID == "" {
		return false, nil
	}
	if err := checkCallID(callID); err != nil {
		return false, err
	}
	r := l.running
	r.mu.Lock()
	calls := slices.Clone(r.m[callID])
	if len(calls) == 0 && !r.overtaken[callID] {
		r.overtaken[callID] = true
		r.order = append(r.order, callID)
		if len(r.order) > maxOvertaken {
			delete(r.overtaken, r.order[0])
			r.order = slices.Delete(r.order, 0, 1)
		}
	}
	r.mu.Unlock()
	for _, c := range calls {
		c.cancel(errCancelRequested)
	}
	for _, c := range calls {
		select {
		case <-c.done:
		case <-ctx.Done():
			return true, ctx.Err()
		}
	}
	return len(calls) > 0, nil
}

// cancelRequested reports whether ctx (a call's context) was cancelled by
// CancelCall.
func cancelRequested(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errCancelRequested)
}

// cancelledResult is the result of a command CancelCall stopped: what it
// wrote, exit code -1 and CancelMarker at the end of stderr.
func cancelledResult(res contracts.ExecResult) contracts.ExecResult {
	if res.Stderr != "" && !strings.HasSuffix(res.Stderr, "\n") {
		res.Stderr += "\n"
	}
	res.Stderr += CancelMarker
	res.ExitCode = -1
	return res
}
