package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/journal"
)

// Model handles the model phase: lease, stream the model into the stream
// store (or reuse a stream that completed before a crash), write the
// assistant node, then advance to TOOLS or COMMIT.
func (e *Engine) Model(ctx context.Context, m contracts.Message) error {
	sub, sess, ok, err := e.open(ctx, m, contracts.PhaseModel)
	if !ok || err != nil {
		return err
	}
	reuse := false
	if sub.StreamKey != "" {
		st, err := e.Streams.GetStream(ctx, sub.StreamKey)
		if err != nil {
			return fmt.Errorf("reading stream %s: %w", sub.StreamKey, err)
		}
		reuse = st.Done != nil
	}
	sub, err = journal.Lease(ctx, e.Journal, sub, e.invocation(), e.now(), e.leaseTTL(), func(n *contracts.Submission) {
		if !reuse {
			n.StreamKey = ids.StreamKey(n.ID, n.Step, n.Attempt)
		}
	})
	if lost(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if attempts(sub) > e.maxAttempts() {
		return e.Fail(ctx, sub, fmt.Sprintf("attempts_exhausted:MODEL step %d", sub.Step))
	}
	if err := e.discardAbandoned(ctx, sub, reuse); err != nil { // earlier attempts' text is void
		return err
	}
	// A stream may last minutes: renew the lease while it runs. A lost
	// lease abandons the stream and this run stops before its next write.
	work, h := e.hold(ctx, sub)
	defer h.release() // also when the stream panics: no heartbeat outlives its handler
	resp, err := e.stream(work, sess, sub, reuse)
	latest, lerr := h.release()
	if lost(lerr) {
		return nil
	}
	sub = latest
	if errors.Is(err, contracts.ErrInvalid) {
		return e.Fail(ctx, sub, "model_error: "+err.Error())
	}
	if err != nil {
		return fmt.Errorf("model step %d of submission %s: %w", sub.Step, sub.ID, err)
	}
	return e.recordModel(ctx, sess, sub, resp)
}

// stream returns the completed response under sub.StreamKey, calling the
// model only if the stream is not already complete.
func (e *Engine) stream(ctx context.Context, sess contracts.Session, sub contracts.Submission, reuse bool) (contracts.ModelResponse, error) {
	if reuse {
		st, err := e.Streams.GetStream(ctx, sub.StreamKey)
		if err != nil {
			return contracts.ModelResponse{}, fmt.Errorf("reading stream %s: %w", sub.StreamKey, err)
		}
		return *st.Done, nil
	}
	client, model, err := e.Models(sess.Spec.Model)
	if err != nil {
		return contracts.ModelResponse{}, err
	}
	path, err := e.Transcript.Path(ctx, sub.Leaf)
	if err != nil {
		return contracts.ModelResponse{}, fmt.Errorf("reading transcript to %s: %w", sub.Leaf, err)
	}
	specs, err := e.toolSpecs(sess)
	if err != nil {
		return contracts.ModelResponse{}, err
	}
	w := &chunkWriter{e: e, sub: sub, key: sub.StreamKey, last: e.now()}
	w.events = append(w.events, contracts.Event{SubmissionID: sub.ID, Key: fmt.Sprintf("step/%d", sub.Step), Type: contracts.EventStep, Step: sub.Step})
	key := sub.StreamKey
	resp, err := client.Stream(ctx, contracts.ModelRequest{Model: model, System: sess.Spec.System, Messages: path, Tools: specs, StreamKey: key},
		func(ev contracts.ModelEvent) error { return w.add(ctx, ev) })
	if err != nil {
		return resp, err
	}
	if err := w.flush(ctx); err != nil {
		return resp, err
	}
	if err := e.Streams.Complete(ctx, key, resp); err != nil {
		return resp, fmt.Errorf("completing stream %s: %w", key, err)
	}
	// The first completion wins: read it back so every process records the same answer.
	st, err := e.Streams.GetStream(ctx, key)
	if err != nil || st.Done == nil {
		return resp, fmt.Errorf("reading completed stream %s: %v", key, err)
	}
	return *st.Done, nil
}

func (e *Engine) toolSpecs(sess contracts.Session) ([]contracts.ToolSpec, error) {
	if len(sess.Spec.Tools) == 0 {
		return nil, nil
	}
	ts, err := e.Registry.Bind(sess.Spec.Tools, contracts.Binding{SessionID: sess.ID, OutputCap: e.OutputCap})
	if err != nil {
		return nil, fmt.Errorf("binding tools of session %s: %w", sess.ID, err)
	}
	return ts.Specs(), nil
}

// recordModel writes the assistant node and advances.
func (e *Engine) recordModel(ctx context.Context, sess contracts.Session, sub contracts.Submission, resp contracts.ModelResponse) error {
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
	if err := e.Transcript.PutNode(ctx, node); err != nil {
		return fmt.Errorf("writing assistant node of submission %s step %d: %w", sub.ID, sub.Step, err)
	}
	next := sub
	next.Leaf = node.ID
	next.Usage.InputTokens += resp.Usage.InputTokens
	next.Usage.OutputTokens += resp.Usage.OutputTokens
	if tripped(next, limitsFor(sess, sub), e.now()) == "tokens" {
		next.Phase, next.Error = contracts.PhaseFailed, "limit_tripped:tokens"
		return e.finishFailed(ctx, sub, next)
	}
	queue := contracts.QueueCommit
	if len(resp.ToolCalls) > 0 {
		next.Phase, next.ToolRequests, queue = contracts.PhaseTools, resp.ToolCalls, contracts.QueueTools
	} else {
		next.Phase, next.Result = contracts.PhaseCommit, resp.Text
	}
	sub, err := journal.Advance(ctx, e.Journal, sub, next, e.now())
	if lost(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return e.Enqueue(ctx, queue, sub, "")
}
