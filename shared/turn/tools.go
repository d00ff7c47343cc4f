package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/journal"
	"github.com/cairnrun/cairn/shared/policy"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// Interrupted is the result given to a mutating call that started and left
// no result, when its sandbox cannot say whether it ran: it is never re-run;
// the model decides what to do.
const Interrupted = "interrupted — outcome unknown: the process running this call stopped before recording a result"

// SandboxUnavailable prefixes the result of a call whose sandbox could not be
// reached: the sandbox is released (the next call gets a new one) and the
// model is told, instead of the turn retrying against a dead sandbox.
const SandboxUnavailable = "sandbox unavailable (unreachable, or no answer in time) — it will be replaced; files written in it earlier may be gone"

func isNotFound(err error) bool { return errors.Is(err, contracts.ErrNotFound) }

// Tools handles the tools phase: lease, decide each call under the policy,
// run the calls that have no result yet (writing "started" first), park
// the turn if a call awaits approval, else write the tool node and advance
// to the next model step.
func (e *Engine) Tools(ctx context.Context, m contracts.Message) (err error) {
	if m.Phase == contracts.PhaseModel {
		return e.pinForModel(ctx, m)
	}
	sub, sess, ok, err := e.open(ctx, m, contracts.PhaseTools)
	if !ok || err != nil {
		return err
	}
	if !e.carried(ctx, sub) { // else the previous phase's closing write took this run's lease (carry)
		sub, err = journal.Lease(ctx, e.Journal, sub, e.invocation(), e.now(), e.leaseTTL(), e.leaseMutation(contracts.PhaseTools, e.now(), false))
		if e.lost(ctx, err) {
			return nil
		}
		if err != nil {
			return err
		}
		describe(ctx, sub)
		if attempts(sub) > e.maxAttempts() {
			return e.Fail(ctx, sub, fmt.Sprintf("attempts_exhausted:TOOLS step %d", sub.Step))
		}
	}
	// Tool calls may run for minutes: renew the lease while they do. A
	// lost lease cancels work (a running call is killed) and this run stops.
	work, h := e.hold(ctx, sub)
	defer func() {
		// A call that failed because the lease was lost (a cancel, a
		// takeover) is not this run's failure: it stops cleanly.
		if _, lerr := h.release(); err != nil && e.lost(ctx, lerr) {
			err = nil
		}
	}()
	defer h.release() // also when a call panics: no heartbeat outlives its handler
	sandbox, err := e.Sandboxes.Acquire(work, sess.ID, sess.Spec.Sandbox)
	if err != nil {
		return fmt.Errorf("acquiring sandbox of session %s: %w", sess.ID, err)
	}
	work = withSandboxKind(work, sess.Spec.Sandbox.Kind)
	ts, err := e.Registry.Bind(sess.Spec.Tools, e.toolBinding(sess, sandbox))
	if errors.Is(err, contracts.ErrInvalid) {
		latest, lerr := h.release()
		if e.lost(ctx, lerr) {
			return nil
		}
		return e.Fail(ctx, latest, "tool_binding: "+err.Error())
	}
	if err != nil {
		return fmt.Errorf("binding tools of session %s: %w", sess.ID, err)
	}
	// A workspace that outlives its sandbox through snapshots: the first
	// result written on a new sandbox tells the model what became of it.
	dw, _ := sandbox.(contracts.DurableWorkspace)
	notice := ""
	if dw != nil {
		notice = dw.WorkspaceNotice()
	}
	mutated, gone := false, false // a mutating call ran (or had run): snapshot after the calls
	recs, err := e.Journal.ToolRecords(work, sub.ID, sub.Step)
	if err != nil {
		return fmt.Errorf("reading tool records of submission %s step %d: %w", sub.ID, sub.Step, err)
	}
	results := make([]contracts.ToolResult, len(sub.ToolRequests))
	var last *pendingResult // the last call's result, written with the advance
	var park []contracts.Approval
	waiting := false // a call's work runs elsewhere (ErrPending): park until it ends
	for i, call := range sub.ToolRequests {
		if r := recs[call.ID].Result; r != nil {
			results[i] = *r
			mutated = mutated || ts.Effect(call.Name) != contracts.ReadOnly
			if err := e.toolEnded(work, sess, sub, call, *r); err != nil { // a re-run: no-op if it was written
				return err
			}
			continue
		}
		d, why := e.decide(sess, sub, call)
		markLater := false // a quick read-only call's started marker goes with its result
		switch d {
		case contracts.Ask:
			park = append(park, e.approvalFor(sess, sub, call))
			continue
		case contracts.Deny:
			results[i] = contracts.ToolResult{CallID: call.ID, Content: "denied: " + why, IsError: true}
		default:
			if recs[call.ID].Started && ts.Effect(call.Name) != contracts.ReadOnly && !e.sandboxKnows(work, sandbox, ids.Effect(sub.ID, sub.Step, call.ID)) {
				results[i] = contracts.ToolResult{CallID: call.ID, Content: Interrupted, IsError: true}
			} else if results[i], markLater, err = e.run(work, sub, ts, call); sandboxGone(work, err) {
				results[i] = e.unavailable(work, sess, call, err)
				gone = true
			} else if errors.Is(err, contracts.ErrPending) {
				waiting = true
				continue
			} else if err != nil {
				return err
			}
		}
		if d != contracts.Deny && ts.Effect(call.Name) != contracts.ReadOnly {
			mutated = true
		}
		if notice != "" {
			results[i].Content = notice + "\n\n" + results[i].Content
		}
		if i == len(sub.ToolRequests)-1 && notice == "" && len(park) == 0 && !waiting && !(dw != nil && mutated && !gone) {
			// The last call, and nothing (a snapshot, a notice) between
			// its result and the advance: both are one write.
			last = &pendingResult{i: i, mark: markLater}
			continue
		}
		if err := e.batch(work, func(ctx context.Context) error { // the result and its terminal event: one write
			return e.recordResult(ctx, sess, sub, call, &results[i], markLater)
		}); err != nil {
			return err
		}
		if notice != "" { // written (by this run or a racing one): said once is enough
			if err := dw.NoticeGiven(work); err != nil {
				e.log().WarnContext(work, "recording that the workspace notice was given", "session_id", sess.ID, "error", err)
			}
			notice = ""
		}
	}
	if dw != nil && mutated && !gone {
		// Before the turn moves on (and its sandbox may idle out): a
		// failure is recorded on the session and the previous snapshot
		// stays the latest.
		if err := dw.SaveWorkspace(work); err != nil {
			e.log().WarnContext(work, "snapshotting the workspace failed", "session_id", sess.ID, "error", err)
		}
	}
	// The calls are done: stop renewing and write on the latest version.
	held := sub
	if sub, err = h.release(); e.lost(ctx, err) {
		if last == nil {
			return nil
		}
		// Another writer moved the record: the call ran, so its result is
		// still kept, alone (the advance is theirs to make).
		call := held.ToolRequests[last.i]
		return e.batch(ctx, func(ctx context.Context) error {
			return e.recordResult(ctx, sess, held, call, &results[last.i], last.mark)
		})
	}
	return e.batch(ctx, func(ctx context.Context) error { // the last result, the tool node, the advance, the next send, the delete: one write
		if last != nil {
			if err := e.recordResult(ctx, sess, sub, sub.ToolRequests[last.i], &results[last.i], last.mark); err != nil {
				return err
			}
		}
		if len(park) > 0 || waiting {
			err = e.park(ctx, sub, park)
		} else {
			err = e.recordTools(ctx, sub, results)
		}
		if err == nil {
			e.ack(ctx)
		}
		return err
	})
}

// toolBinding is what a session's tools are bound to where they run.
func (e *Engine) toolBinding(sess contracts.Session, sandbox contracts.SandboxAPI) contracts.Binding {
	return e.binding(sess, contracts.Binding{Sandbox: sandbox, SessionID: sess.ID, OutputCap: e.OutputCap, Workflows: e.Workflows, MCP: e.MCP})
}

// sandboxKnows asks the sandbox's call ledger whether a started call ran
// (or is running): then re-issuing it with the same call id returns the
// recorded outcome without running it again. A sandbox without a ledger, or
// one that cannot answer, knows nothing.
func (e *Engine) sandboxKnows(ctx context.Context, sandbox contracts.SandboxAPI, callID string) bool {
	ledger, ok := sandbox.(contracts.CallLedger)
	if !ok {
		return false
	}
	o, err := ledger.CallOutcome(ctx, callID)
	if err != nil {
		e.log().WarnContext(ctx, "sandbox cannot say whether a call ran", "call_id", callID, "error", err)
		return false
	}
	return o.State == contracts.CallRunning || o.State == contracts.CallDone
}

// sandboxGone: the sandbox could not be reached, or did not answer within
// the call's own time (a hung task) while this handler still had time.
func sandboxGone(ctx context.Context, err error) bool {
	return errors.Is(err, contracts.ErrUnavailable) || (errors.Is(err, contracts.ErrTimeout) && ctx.Err() == nil)
}

// unavailable releases the session's unreachable sandbox and gives the call
// an error result naming the cause.
func (e *Engine) unavailable(ctx context.Context, sess contracts.Session, call contracts.ToolCall, cause error) contracts.ToolResult {
	e.log().WarnContext(ctx, "sandbox unavailable; releasing it", "session_id", sess.ID, "call_id", call.ID, "error", cause)
	if err := e.Sandboxes.Release(ctx, sess.ID); err != nil {
		e.log().WarnContext(ctx, "releasing unavailable sandbox", "session_id", sess.ID, "error", err)
	}
	return contracts.ToolResult{CallID: call.ID, Content: SandboxUnavailable + ": " + cause.Error(), IsError: true}
}

func (e *Engine) decide(sess contracts.Session, sub contracts.Submission, call contracts.ToolCall) (contracts.Decision, string) {
	d, why := policy.Decide(sess.Spec.Policy, call)
	if d != contracts.Ask {
		return d, why
	}
	for _, a := range sub.Approvals {
		if a.CallID != call.ID || a.Decision == "" {
			continue
		}
		if a.Decision == contracts.Allow {
			return contracts.Allow, "approved"
		}
		reason := "denied by the approver"
		if a.Reason != "" {
			reason += ": " + a.Reason
		}
		return contracts.Deny, reason
	}
	return contracts.Ask, why
}

func (e *Engine) approvalFor(sess contracts.Session, sub contracts.Submission, call contracts.ToolCall) contracts.Approval {
	for _, a := range sub.Approvals {
		if a.CallID == call.ID {
			return a
		}
	}
	wait := DefaultApprovalWait
	if s := sess.Spec.Policy.ApprovalTimeoutSeconds; s > 0 {
		wait = seconds(int64(s))
	}
	return contracts.Approval{ID: ids.Approval(sub.ID, sub.Step, call.ID), CallID: call.ID, Tool: call.Name, Input: call.Input, Step: sub.Step, ExpiresAt: e.now().Add(wait)}
}

// pendingResult is a call's result not written yet: it goes with the
// tools phase's closing write.
type pendingResult struct {
	i    int  // its index in the step's calls
	mark bool // its started marker is not written either
}

// DefaultStartedAfter is how long a read-only call may run before its
// started marker is written while it runs (Deps.StartedAfter).
const DefaultStartedAfter = 250 * time.Millisecond

// run writes the started marker, runs the call and reports progress. A
// mutating call's marker is written before it runs (a call started and
// never finished is never re-run blindly). A read-only call may run again
// after a crash, so its marker waits: written once the call has run for
// StartedAfter (the call goes on meanwhile), or, for a call done before
// that, with its result (markLater) — one write fewer per quick call.
func (e *Engine) run(ctx context.Context, sub contracts.Submission, ts contracts.Toolset, call contracts.ToolCall) (_ contracts.ToolResult, markLater bool, _ error) {
	var late chan error
	var timer *time.Timer
	if ts.Effect(call.Name) == contracts.ReadOnly {
		late = make(chan error, 1)
		mctx, mcall := ctx, call // the timer's own: ctx and call are set again below while it may fire
		timer = time.AfterFunc(e.startedAfter(), func() {
			late <- e.batch(mctx, func(ctx context.Context) error { return e.markStarted(ctx, sub, mcall) })
		})
	} else if err := e.batch(ctx, func(ctx context.Context) error { return e.markStarted(ctx, sub, call) }); err != nil {
		return contracts.ToolResult{}, false, err
	}
	r, err := e.invoke(ctx, sub, ts, call, false)
	if timer != nil {
		if markLater = timer.Stop(); !markLater {
			if merr := <-late; merr != nil && err == nil { // written (or not) before the result: events stay in order
				return r, false, merr
			}
		}
	}
	if err != nil {
		return r, markLater, fmt.Errorf("running call %s (%s): %w", call.ID, call.Name, err)
	}
	r.CallID = call.ID // its terminal event is written once the result is recorded (toolEnded)
	return r, markLater, nil
}

// invoke runs call in ts as step sub.Step's, traced and measured: its
// span, duration and failures, whichever phase runs it. A tentative run
// (fuse) that fails or runs out of time is not measured: its result is
// dropped and the tools phase runs the call again, measured there.
func (e *Engine) invoke(ctx context.Context, sub contracts.Submission, ts contracts.Toolset, call contracts.ToolCall, tentative bool) (contracts.ToolResult, error) {
	call.EffectID = ids.Effect(sub.ID, sub.Step, call.ID)
	call.SessionID, call.SubmissionID, call.Step = sub.SessionID, sub.ID, sub.Step
	effect := ts.Effect(call.Name)
	ctx, span := telemetry.Tracer().Start(ctx, "cairn.tool "+call.Name, trace.WithAttributes(attribute.String("cairn.tool.name", call.Name),
		attribute.String("cairn.tool.effect", string(effect)), attribute.String("cairn.effect_id", call.EffectID), attribute.String("cairn.call_id", call.ID),
		attribute.Int("cairn.step", sub.Step), attribute.String("cairn.sandbox.kind", sandboxKind(ctx))))
	start := time.Now()
	r, err := ts.Call(ctx, call)
	span.SetAttributes(attribute.Bool("cairn.tool.is_error", r.IsError))
	if telemetry.CaptureContent() { // the operator's opt-in: never by default
		span.SetAttributes(attribute.String("cairn.tool.input", telemetry.Content(string(call.Input))), attribute.String("cairn.tool.output", telemetry.Content(r.Content)))
	}
	telemetry.Fail(span, err)
	if tentative && (err != nil || ctx.Err() != nil) {
		span.SetAttributes(attribute.Bool("cairn.tool.dropped", true))
		span.End()
		return r, err
	}
	outcome := "ok"
	switch {
	case ctx.Err() != nil:
		outcome = "cancelled" // its run gave up on it (a lost lease, a cancel): not the tool's failure
	case err != nil || r.IsError:
		outcome = "error"
		telemetry.ToolFailures.Record(ctx, 1, toolDim(ts, call.Name))
	}
	telemetry.ToolDuration.Record(ctx, ms(time.Since(start)), toolDim(ts, call.Name), outcome)
	span.End()
	return r, err
}

func (e *Engine) startedAfter() time.Duration {
	if e.StartedAfter <= 0 {
		return DefaultStartedAfter
	}
	return e.StartedAfter
}

// markStarted writes the call's started marker and its event (one write
// inside the caller's batch).
func (e *Engine) markStarted(ctx context.Context, sub contracts.Submission, call contracts.ToolCall) error {
	if err := e.Journal.MarkToolStarted(ctx, sub.ID, sub.Step, call.ID); err != nil {
		return fmt.Errorf("marking call %s started: %w", call.ID, err)
	}
	return e.emit(ctx, contracts.Event{SubmissionID: sub.ID, Key: fmt.Sprintf("tool_started/%d/%s", sub.Step, call.ID), Type: contracts.EventToolStarted, Step: sub.Step, Tool: call.Name, CallID: call.ID, Text: string(call.Input)})
}

// recordResult writes a call's result (the first written wins: *r becomes
// it) and its terminal event, after its started marker when mark.
func (e *Engine) recordResult(ctx context.Context, sess contracts.Session, sub contracts.Submission, call contracts.ToolCall, r *contracts.ToolResult, mark bool) error {
	if mark {
		if err := e.markStarted(ctx, sub, call); err != nil {
			return err
		}
	}
	if err := e.Journal.PutToolResult(ctx, sub.ID, sub.Step, *r); err != nil {
		return fmt.Errorf("recording result of call %s: %w", call.ID, err)
	}
	if recs, err := e.Journal.ToolRecords(ctx, sub.ID, sub.Step); err == nil && recs[call.ID].Result != nil {
		*r = *recs[call.ID].Result // first result written wins
	}
	return e.toolEnded(ctx, sess, sub, call, *r) // the call's one terminal event
}

// park records pending approvals durably and releases the lease; the turn
// waits for a decision (Decide) or the approval timeout (repair), or for
// the work a call started elsewhere (a workflow run wakes it when it ends;
// repair re-drives it meanwhile, and the call finds it still running).
func (e *Engine) park(ctx context.Context, sub contracts.Submission, pending []contracts.Approval) error {
	next := sub
	next.LeaseOwner, next.LeaseUntil = "", time.Time{}
	next.Approvals = mergeApprovals(sub.Approvals, pending)
	next.Attempt = 0 // waiting for a person is not a failed attempt
	if len(pending) > 0 && next.ParkedAt.IsZero() {
		next.ParkedAt = e.now() // waiting for a decision is not run time
	}
	parked, err := journal.Update(ctx, e.Journal, sub, next, e.now())
	if e.lost(ctx, err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, a := range pending {
		if err := e.emit(ctx, contracts.Event{SubmissionID: sub.ID, Key: "approval/" + a.ID, Type: contracts.EventApprovalNeeded, Step: sub.Step, Tool: a.Tool, CallID: a.CallID, ApprovalID: a.ID, Text: string(a.Input)}); err != nil {
			return err
		}
	}
	e.log().InfoContext(ctx, "turn parked", "session_id", parked.SessionID, "submission_id", parked.ID, "step", parked.Step, "approvals_pending", len(pending))
	return nil
}

// keepDecided is history with the decided approvals of a step appended:
// who decided what stays in the record once the step advances.
func keepDecided(history, step []contracts.Approval) []contracts.Approval {
	out := history
	for _, a := range step {
		if a.Decision != "" {
			out = append(out[:len(out):len(out)], a)
		}
	}
	return out
}

func mergeApprovals(have, add []contracts.Approval) []contracts.Approval {
	out := append([]contracts.Approval(nil), have...)
	for _, a := range add {
		found := false
		for _, h := range have {
			found = found || h.ID == a.ID
		}
		if !found {
			out = append(out, a)
		}
	}
	return out
}

// recordTools writes the tool node and advances to the next model step.
func (e *Engine) recordTools(ctx context.Context, sub contracts.Submission, results []contracts.ToolResult) error {
	node := contracts.Node{
		ID: ids.Node(sub.ID, sub.Step, contracts.RoleTool), Parent: sub.Leaf, SessionID: sub.SessionID,
		SubmissionID: sub.ID, Role: contracts.RoleTool, CreatedAt: e.now(),
	}
	for i := range results {
		node.Blocks = append(node.Blocks, contracts.Block{Type: contracts.BlockToolResult, ToolResult: &results[i]})
	}
	if err := e.putNode(ctx, node); err != nil {
		return fmt.Errorf("writing tool node of submission %s step %d: %w", sub.ID, sub.Step, err)
	}
	next := sub
	next.Step, next.Phase, next.Leaf = sub.Step+1, contracts.PhaseModel, node.ID
	next.ToolRequests, next.Approvals, next.StreamKey = nil, nil, ""
	next.Decided = keepDecided(sub.Decided, sub.Approvals)
	owner := e.chained(ctx, contracts.QueueModel)
	sub, err := e.advance(ctx, sub, next, owner)
	if e.lost(ctx, err) {
		return nil
	}
	if err != nil {
		return err
	}
	e.advanced(ctx, node.Parent) // first its parent, when the same write stored it (a fused step's assistant node)
	e.advanced(ctx, node.ID)
	if err := e.Enqueue(ctx, contracts.QueueModel, sub, ""); err != nil {
		return err
	}
	return e.handOver(ctx, sub, next, owner)
}
