package turn

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// DefaultFuseWithin is how long a model phase may spend running its step's
// read-only calls itself before it gives them to the tools phase
// (Deps.FuseWithin).
const DefaultFuseWithin = 50 * time.Millisecond

// fuse runs a model step's tool calls in the model phase, where the store
// batches (Deps.Batch) and each call is read-only, allowed by the
// session's policy without asking, and all its work is in the session's
// sandbox (contracts.SandboxedToolset: not a workflow run, not an MCP
// server's): their results, the tool node and the advance to the next
// model step then go in the model phase's closing write, one write and one
// queue hop fewer than a tools phase. A read-only call may run again, so
// nothing is lost when fusing gives up — a call not done within
// FuseWithin (it is cancelled), an error, a limit the step trips, a
// sandbox to tell of a restored workspace — and returns nil: the step goes
// to the tools phase as before, which runs the calls again. ctx is the
// model phase's held one (its lease renewed, a cancel ends it). The calls'
// time is bounded so that the stream's completion, written in the same
// closing write, is not held back by a long call (a crash before it buys
// the stream again); getting the sandbox is not (the tools phase would
// wait for it as long, and a start cut short would be redone there).
func (e *Engine) fuse(ctx context.Context, sess contracts.Session, sub contracts.Submission, resp contracts.ModelResponse) *fused {
	within := e.FuseWithin
	if within == 0 {
		within = DefaultFuseWithin
	}
	calls := resp.ToolCalls
	if e.Batch == nil || len(calls) == 0 || within < 0 {
		return nil
	}
	after := sub // as recordModel will write it: the step's tokens count
	after.Usage.InputTokens += resp.Usage.InputTokens
	after.Usage.OutputTokens += resp.Usage.OutputTokens
	if tripped(after, limitsFor(sess, sub), e.now()) != "" {
		return nil // the turn ends (model or tools phase) before any call
	}
	for _, call := range calls {
		if d, _ := e.decide(sess, sub, call); d != contracts.Allow {
			return nil
		}
	}
	sandbox, err := e.Sandboxes.Acquire(ctx, sess.ID, sess.Spec.Sandbox)
	if err != nil {
		return nil
	}
	if dw, ok := sandbox.(contracts.DurableWorkspace); ok && dw.WorkspaceNotice() != "" {
		return nil // the tools phase tells the model first
	}
	ts, err := e.Registry.Bind(sess.Spec.Tools, e.toolBinding(sess, sandbox))
	if err != nil {
		return nil
	}
	contained, _ := ts.(contracts.SandboxedToolset)
	for _, call := range calls {
		if ts.Effect(call.Name) != contracts.ReadOnly || contained == nil || !contained.InSandbox(call.Name) {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(withSandboxKind(ctx, sess.Spec.Sandbox.Kind), within)
	defer cancel()
	ran := make(chan []contracts.ToolResult, 1) // nil: given up
	go func() {
		defer func() {
			if r := recover(); r != nil { // not this goroutine's to crash the process: the tools phase runs it again, where the worker recovers it
				e.log().WarnContext(ctx, "a tool panicked in the model phase; its step goes to the tools phase", "submission_id", sub.ID, "panic", fmt.Sprint(r))
				ran <- nil
			}
		}()
		results := make([]contracts.ToolResult, len(calls))
		for i, call := range calls {
			r, err := e.invoke(ctx, sub, ts, call, true)
			if err != nil || ctx.Err() != nil {
				ran <- nil
				return
			}
			r.CallID = call.ID
			results[i] = r
		}
		ran <- results
	}()
	select {
	case results := <-ran:
		if results == nil {
			return nil
		}
		return &fused{calls: calls, results: results}
	case <-ctx.Done():
		// Out of time (or the lease lost): the calls are cancelled, and one
		// that does not stop at once is not waited for — it writes
		// nothing, its result is dropped.
		return nil
	}
}

// fused is what fuse ran: the calls and their results, in order.
type fused struct {
	calls   []contracts.ToolCall
	results []contracts.ToolResult
}

// of reports whether f ran exactly calls (the completion a closing write
// keeps is the first written: a racing attempt's may ask for others).
func (f *fused) of(calls []contracts.ToolCall) bool {
	if f == nil || len(f.calls) != len(calls) {
		return false
	}
	for i, c := range calls {
		if f.calls[i].ID != c.ID || f.calls[i].Name != c.Name || !bytes.Equal(f.calls[i].Input, c.Input) {
			return false
		}
	}
	return true
}

// recordFused writes, inside the model phase's closing write, each fused
// call's started marker, result and terminal event, then the tool node and
// the advance to the next model step, as the tools phase would: step is
// the record as that phase would find it (TOOLS, its calls, at the stored
// version).
func (e *Engine) recordFused(ctx context.Context, sess contracts.Session, step contracts.Submission, results []contracts.ToolResult) error {
	for i, call := range step.ToolRequests {
		if err := e.recordResult(ctx, sess, step, call, &results[i], true); err != nil {
			return err
		}
	}
	return e.recordTools(ctx, step, results)
}
