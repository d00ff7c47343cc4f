package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/journal"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// Model handles the model phase: lease, stream the model into the stream
// store (or reuse a stream that completed before a crash), write the
// assistant node, then advance to TOOLS or COMMIT.
func (e *Engine) Model(ctx context.Context, m contracts.Message) error {
	sub, sess, ok, err := e.open(ctx, m, contracts.PhaseModel)
	if !ok && err == nil && sub.Phase == contracts.PhaseCommit && sub.Step == m.Step {
		describe(ctx, sub)
		return e.commitFinal(ctx, sub) // this message's run recorded the answer; its commit failed
	}
	if !ok || err != nil {
		return err
	}
	if len(unlisted(sess)) > 0 {
		// Its stdio MCP servers' tools are not listed yet: that is done
		// where sandboxes are placed, the tools phase's handler, which then
		// sends this phase again (pinForModel).
		return e.Enqueue(ctx, contracts.QueueTools, sub, "mcp-pin")
	}
	reuse := false
	if !e.carried(ctx, sub) { // else the previous phase's closing write took this run's lease (carry)
		if sub.StreamKey != "" {
			st, err := e.Streams.GetStream(ctx, sub.StreamKey)
			if err != nil {
				return fmt.Errorf("reading stream %s: %w", sub.StreamKey, err)
			}
			reuse = st.Done != nil
		}
		exhausted := false
		err = e.batch(ctx, func(ctx context.Context) error { // the lease and the void of earlier attempts: one write
			sub, err = journal.Lease(ctx, e.Journal, sub, e.invocation(), e.now(), e.leaseTTL(), e.leaseMutation(contracts.PhaseModel, e.now(), reuse))
			if err != nil {
				return err
			}
			describe(ctx, sub)
			if exhausted = attempts(sub) > e.maxAttempts(); exhausted {
				return nil
			}
			return e.discardAbandoned(ctx, sub, reuse) // earlier attempts' text is void
		})
		if e.lost(ctx, err) {
			return nil
		}
		if err != nil {
			return err
		}
		if exhausted {
			return e.Fail(ctx, sub, fmt.Sprintf("attempts_exhausted:MODEL step %d", sub.Step))
		}
	}
	// A stream may last minutes: renew the lease while it runs. A lost
	// lease abandons the stream and this run stops before its next write.
	work, h := e.hold(ctx, sub)
	defer h.release() // also when the stream panics: no heartbeat outlives its handler
	resp, w, err := e.stream(work, sess, sub, reuse)
	var f *fused
	if err == nil {
		f = e.fuse(work, sess, sub, resp) // still holding the lease: renewed, and a cancel ends the calls
	}
	latest, lerr := h.release()
	if e.lost(ctx, lerr) {
		return nil
	}
	sub = latest
	if errors.Is(err, contracts.ErrInvalid) {
		return e.Fail(ctx, sub, "model_error: "+err.Error())
	}
	if err != nil {
		return fmt.Errorf("model step %d of submission %s: %w", sub.Step, sub.ID, err)
	}
	return e.close(ctx, sess, sub, resp, w, f)
}

// close writes the stream's tail and its completion marker (w, if the
// stream is new), the assistant node, the advance, the next phase's send —
// or, for a final answer, the commit itself — and the message's delete:
// one write where the store batches (call by call otherwise, in that
// order). A finished stream is not bought twice for what goes wrong in the
// rest: if the rest fails, the batch is undone and the completion is
// written again on its own. (A panic is a crash: the handler's message is
// redelivered and the stream, never completed, bought again.) f, when the
// step's calls ran here (fuse), goes in the same write.
func (e *Engine) close(ctx context.Context, sess contracts.Session, sub contracts.Submission, resp contracts.ModelResponse, w *chunkWriter, f *fused) error {
	var kept chunkWriter
	answer := resp
	if w != nil && e.Batch != nil {
		kept = w.keep()
	}
	err := e.batch(ctx, func(ctx context.Context) error {
		if w != nil {
			var err error
			if resp, err = e.complete(ctx, w, resp); err != nil {
				return err
			}
		}
		if err := e.recordModel(ctx, sess, sub, resp, f); err != nil {
			return err
		}
		e.ack(ctx)
		return nil
	})
	if err != nil && w != nil && e.Batch != nil {
		*w = kept
		if cerr := e.batch(ctx, func(ctx context.Context) error { _, err := e.complete(ctx, w, answer); return err }); cerr != nil {
			return errors.Join(err, cerr)
		}
	}
	return err
}

// stream returns the response under sub.StreamKey, calling the model only
// if the stream is not already complete. A new stream comes back with its
// writer, whose tail and completion marker complete writes.
func (e *Engine) stream(ctx context.Context, sess contracts.Session, sub contracts.Submission, reuse bool) (contracts.ModelResponse, *chunkWriter, error) {
	if reuse {
		st, err := e.Streams.GetStream(ctx, sub.StreamKey)
		if err != nil {
			return contracts.ModelResponse{}, nil, fmt.Errorf("reading stream %s: %w", sub.StreamKey, err)
		}
		return *st.Done, nil, nil
	}
	client, model, err := e.Models(sess.Spec.Model)
	if err != nil {
		return contracts.ModelResponse{}, nil, err
	}
	path, err := e.path(ctx, sub.SessionID, sub.Leaf)
	if err != nil {
		return contracts.ModelResponse{}, nil, fmt.Errorf("reading transcript to %s: %w", sub.Leaf, err)
	}
	specs, err := e.toolSpecs(sess)
	if err != nil {
		return contracts.ModelResponse{}, nil, err
	}
	w := &chunkWriter{e: e, sub: sub, key: sub.StreamKey, last: e.now()}
	w.events = append(w.events, contracts.Event{SubmissionID: sub.ID, Key: fmt.Sprintf("step/%d", sub.Step), Type: contracts.EventStep, Step: sub.Step,
		Attempt: sub.Attempt, Text: "attempt " + strconv.Itoa(sub.Attempt) + " under the lease of " + sub.LeaseOwner})
	provider, _, _ := strings.Cut(sess.Spec.Model, ":")
	ctx, span := telemetry.Tracer().Start(ctx, "cairn.model "+sess.Spec.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gen_ai.system", provider), attribute.String("gen_ai.request.model", model),
			attribute.Int("cairn.step", sub.Step), attribute.Int("cairn.attempt", sub.Attempt), attribute.Int("cairn.tools_offered", len(specs))))
	start := time.Now()
	first := false
	resp, err := client.Stream(ctx, contracts.ModelRequest{Model: model, System: sess.Spec.System, Messages: path, Tools: specs, StreamKey: sub.StreamKey},
		func(ev contracts.ModelEvent) error {
			if !first {
				first = true
				ttft := time.Since(start)
				span.SetAttributes(attribute.Int64("cairn.model.ttft_ms", ttft.Milliseconds()))
				telemetry.ModelTTFT.Record(ctx, ms(ttft), provider, e.modelDim(sess.Spec.Model))
			}
			return w.add(ctx, ev)
		})
	span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", resp.Usage.InputTokens), attribute.Int("gen_ai.usage.output_tokens", resp.Usage.OutputTokens),
		attribute.Int("cairn.model.tool_calls", len(resp.ToolCalls)))
	if telemetry.CaptureContent() { // the operator's opt-in: never by default
		var last []byte
		if len(path) > 0 {
			last, _ = json.Marshal(path[len(path)-1])
		}
		span.SetAttributes(attribute.String("gen_ai.input.messages", telemetry.Content(string(last))), attribute.String("gen_ai.output.messages", telemetry.Content(resp.Text)))
	}
	dim := e.modelDim(sess.Spec.Model) // the provider is one the deployment serves (resolved above)
	telemetry.ModelLatency.Record(ctx, ms(time.Since(start)), provider, dim)
	telemetry.ModelTokens.Record(ctx, float64(resp.Usage.InputTokens), provider, dim, "input")
	telemetry.ModelTokens.Record(ctx, float64(resp.Usage.OutputTokens), provider, dim, "output")
	telemetry.Fail(span, err)
	span.End()
	return resp, w, err
}

// complete writes the stream's unflushed tail and its completion marker,
// and returns the completion that won (the first written: every process
// records the same answer). The tail's chunks that are not text (tool
// calls, usage) are not stored: the completion holds them, and nothing
// reads a completed stream's chunks.
func (e *Engine) complete(ctx context.Context, w *chunkWriter, resp contracts.ModelResponse) (contracts.ModelResponse, error) {
	w.chunks = w.chunks[:0]
	if err := w.flush(ctx); err != nil {
		return resp, err
	}
	won, err := e.Streams.Complete(ctx, w.key, resp)
	if err != nil {
		return resp, fmt.Errorf("completing stream %s: %w", w.key, err)
	}
	return won, nil
}

func (e *Engine) toolSpecs(sess contracts.Session) ([]contracts.ToolSpec, error) {
	if len(sess.Spec.Tools) == 0 && (sess.MCP == nil || len(sess.MCP.Tools) == 0) {
		return nil, nil
	}
	ts, err := e.Registry.Bind(sess.Spec.Tools, e.binding(sess, contracts.Binding{SessionID: sess.ID, OutputCap: e.OutputCap}))
	if err != nil {
		return nil, fmt.Errorf("binding tools of session %s: %w", sess.ID, err)
	}
	return ts.Specs(), nil
}

// recordModel writes the assistant node and advances — past the tools
// phase when f holds the step's calls, run (fuse).
func (e *Engine) recordModel(ctx context.Context, sess contracts.Session, sub contracts.Submission, resp contracts.ModelResponse, f *fused) error {
	node := contracts.Node{
		ID: ids.Node(sub.ID, sub.Step, contracts.RoleAssistant), Parent: sub.Leaf, SessionID: sub.SessionID,
		SubmissionID: sub.ID, Role: contracts.RoleAssistant, CreatedAt: e.now(),
	}
	if resp.Text != "" {
		node.Blocks = append(node.Blocks, contracts.Block{Type: contracts.BlockText, Text: resp.Text})
	}
	for i := range resp.ToolCalls {
		node.Blocks = append(node.Blocks, contracts.Block{Type: contracts.BlockToolUse, ToolCall: &resp.ToolCalls[i]})
	}
	if moved, err := e.movedOn(ctx, sub); moved || err != nil {
		return err // taken over: its advance would lose, and its node must not stand for the next attempt's
	}
	if err := e.putNode(ctx, node); err != nil {
		return fmt.Errorf("writing assistant node of submission %s step %d: %w", sub.ID, sub.Step, err)
	}
	next := sub
	next.Leaf = node.ID
	next.Usage.InputTokens += resp.Usage.InputTokens
	next.Usage.OutputTokens += resp.Usage.OutputTokens
	next.Cost = withModelCost(next.Cost, e.cost(sess.Spec.Model, next.Usage)) // in the same write as the usage
	if tripped(next, limitsFor(sess, sub), e.now()) == "tokens" {
		next.Phase, next.Error = contracts.PhaseFailed, "limit_tripped:tokens"
		return e.finishFailed(ctx, sub, next)
	}
	queue := contracts.QueueCommit
	if len(resp.ToolCalls) > 0 {
		next.Phase, next.ToolRequests, queue = contracts.PhaseTools, resp.ToolCalls, contracts.QueueTools
		if f.of(resp.ToolCalls) && e.inBatch(ctx) {
			return e.recordFused(ctx, sess, next, f.results)
		}
	} else {
		next.Phase, next.Result = contracts.PhaseCommit, resp.Text
		if e.Batch != nil { // one transaction: the commit is part of this write, no hop
			next.Phase = contracts.PhaseCommitted
			return e.finish(ctx, sub, next)
		}
	}
	owner := ""
	if queue == contracts.QueueTools {
		owner = e.chained(ctx, queue)
	}
	sub, err := e.advance(ctx, sub, next, owner)
	if e.lost(ctx, err) {
		return nil
	}
	if err != nil {
		return err
	}
	e.advanced(ctx, node.ID)
	if queue == contracts.QueueCommit {
		return e.commitFinal(ctx, sub)
	}
	if err := e.Enqueue(ctx, queue, sub, ""); err != nil {
		return err
	}
	return e.handOver(ctx, sub, next, owner)
}

// commitFinal commits sub, just advanced to COMMIT with its final answer,
// in the model phase's own run: call by call (no Deps.Batch) the answer is
// recorded first, so a crash leaves a COMMIT record for repair
// (StateFinalNotCommitted) — the commit phase's message would carry nothing
// the record does not, and costs a queue hop (a send, a receive, a delete
// and an invocation). If the commit fails, the model message is delivered
// again and its run, finding the record in COMMIT at its step, commits it.
func (e *Engine) commitFinal(ctx context.Context, sub contracts.Submission) error {
	next := sub
	next.Phase = contracts.PhaseCommitted
	return e.finish(ctx, sub, next)
}
