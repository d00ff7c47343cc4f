package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/telemetry"
	"github.com/cairnrun/cairn/shared/turn"
)

// resultOf is a finished child turn as its node's result.
func resultOf(sub contracts.Submission) contracts.NodeResult {
	if sub.Phase == contracts.PhaseCommitted {
		return contracts.NodeResult{OK: true, Output: sub.Result}
	}
	reason := sub.Error
	if reason == "" {
		reason = string(sub.Phase)
	}
	return contracts.NodeResult{OK: false, Error: reason}
}

// results collects the run's known node results from its node records,
// and counts the nodes without one. A node's result is written before its
// child turn ends (the Ending hook: an error retries the turn's handler),
// so the records are enough and an evaluation reads no child turn (a
// 1,000-node fan-out evaluates about a hundred times: reading every
// unresolved node's turn each time made it quadratic). A repair evaluation
// (repair) also reconciles each unresolved node with its turn — the
// child's record is the truth — in case a result was lost anyway.
func (d *Driver) results(ctx context.Context, runID string, repair bool) (map[string]contracts.NodeResult, int, error) {
	nodes, err := d.Store.ListNodes(ctx, runID)
	if err != nil {
		return nil, 0, fmt.Errorf("listing nodes of run %s: %w", runID, err)
	}
	out := make(map[string]contracts.NodeResult, len(nodes))
	unresolved := 0
	for _, n := range nodes {
		if n.Result != nil {
			out[n.ID] = *n.Result
			continue
		}
		if !repair {
			unresolved++
			continue
		}
		sub, ok, err := d.child(ctx, n)
		if err != nil {
			return nil, 0, err
		}
		if !ok || !sub.Phase.Terminal() {
			unresolved++
			continue
		}
		res := resultOf(sub)
		if err := d.Store.SetNodeResult(ctx, runID, n.ID, res); err != nil {
			return nil, 0, fmt.Errorf("recording result of node %s: %w", n.ID, err)
		}
		out[n.ID] = res
	}
	return out, unresolved, nil
}

// child returns the submission running node n, if it exists yet.
func (d *Driver) child(ctx context.Context, n contracts.WorkflowNode) (contracts.Submission, bool, error) {
	subs, err := d.Engine.Journal.ListSubmissions(ctx, n.SessionID, "", 1)
	if err != nil {
		return contracts.Submission{}, false, fmt.Errorf("reading the turn of node %s: %w", n.ID, err)
	}
	if len(subs) == 0 {
		return contracts.Submission{}, false, nil
	}
	return subs[0], true, nil
}

// startNode records the node and starts its child turn, each step
// create-if-absent. A node whose spec cannot run (no prompt, unknown model)
// fails as a value the script sees, not as an error of the driver.
func (d *Driver) startNode(ctx context.Context, run contracts.WorkflowRun, p contracts.PendingNode) error {
	sid := ids.NodeSession(run.ID, p.ID)
	node := contracts.WorkflowNode{RunID: run.ID, ID: p.ID, Seq: p.Seq, Key: p.Key, Spec: p.Spec, SessionID: sid, CreatedAt: d.now()}
	if _, _, err := d.Store.PutNode(ctx, node); err != nil {
		return fmt.Errorf("recording node %s of run %s: %w", p.ID, run.ID, err)
	}
	spec := d.sessionSpec(p.Spec)
	if err := turn.CheckSpec(spec); err != nil { // the same bounds as a session made through the API
		return d.nodeFailed(ctx, run.ID, p.ID, "invalid node: "+err.Error())
	}
	if err := d.Engine.CheckModel(spec.Model); err != nil {
		return d.nodeFailed(ctx, run.ID, p.ID, "invalid node: "+err.Error())
	}
	now := d.now()
	owner := run.Owner // the run's owner sees its nodes' sessions
	if owner == "" {
		owner = "workflow:" + run.ID // a run from before runs had owners
	}
	_, err := d.Engine.Journal.CreateSession(ctx, contracts.Session{
		ID: sid, Owner: owner, Spec: spec, Workflow: &contracts.WorkflowRef{RunID: run.ID, NodeID: p.ID},
		CreatedAt: now, UpdatedAt: now,
	})
	if err != nil && !errors.Is(err, contracts.ErrExists) {
		return fmt.Errorf("creating the session of node %s: %w", p.ID, err)
	}
	// The node's turn is a trace of its own, linked to this evaluation.
	if _, _, err := d.Engine.AcceptWith(ctx, sid, p.Spec.Prompt, "node:"+p.ID, turn.AcceptOptions{Link: telemetry.Inject(ctx)}); err != nil {
		if errors.Is(err, contracts.ErrInvalid) || errors.Is(err, contracts.ErrTooLarge) {
			return d.nodeFailed(ctx, run.ID, p.ID, "invalid node: "+err.Error())
		}
		return fmt.Errorf("starting the turn of node %s: %w", p.ID, err)
	}
	return nil
}

func (d *Driver) sessionSpec(n contracts.NodeSpec) contracts.SessionSpec {
	spec := contracts.SessionSpec{Model: n.Model, System: n.System, Tools: n.Tools, Limits: n.Limits}
	if spec.Model == "" {
		spec.Model = d.DefaultModel
	}
	if spec.Tools == nil {
		for _, def := range d.Engine.Registry.Definitions() {
			if !def.OptIn {
				spec.Tools = append(spec.Tools, contracts.ToolConfig{Name: def.Name})
			}
		}
	}
	return spec
}

func (d *Driver) nodeFailed(ctx context.Context, runID, nodeID, reason string) error {
	if err := d.Store.SetNodeResult(ctx, runID, nodeID, contracts.NodeResult{OK: false, Error: reason}); err != nil {
		return fmt.Errorf("recording result of node %s: %w", nodeID, err)
	}
	return d.wake(ctx, runID, "node:"+nodeID)
}

// Ending is the engine's hook (turn.Deps.Ending): when a node's turn is
// about to end, record the node's result (first wins) and wake its run.
// Turns of other sessions pass through.
func (d *Driver) Ending(ctx context.Context, sub contracts.Submission) error {
	if sub.Phase == contracts.PhaseCancelled {
		if err := d.cancelChildRuns(ctx, sub); err != nil {
			return err
		}
	}
	sess, err := d.Engine.Journal.GetSession(ctx, sub.SessionID)
	if err != nil {
		return fmt.Errorf("reading session %s: %w", sub.SessionID, err)
	}
	ref := sess.Workflow
	if ref == nil {
		return nil
	}
	if err := d.Store.SetNodeResult(ctx, ref.RunID, ref.NodeID, resultOf(sub)); err != nil && !errors.Is(err, contracts.ErrNotFound) {
		return fmt.Errorf("recording result of node %s: %w", ref.NodeID, err)
	}
	return d.wake(ctx, ref.RunID, "node:"+ref.NodeID)
}
