package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A node row keeps the node without its result in body and the result in
// its own column, set once: so the first result wins with one conditional
// UPDATE, and a node is never rewritten.

// PutNode stores n unless a node with its (run id, id) exists; then it
// returns that node, unchanged, and created=false.
func (w *Workflows) PutNode(ctx context.Context, n contracts.WorkflowNode) (contracts.WorkflowNode, bool, error) {
	if n.RunID == "" || n.ID == "" {
		return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %q: empty id or run id: %w", n.ID, contracts.ErrInvalid)
	}
	spec := n
	spec.Result = nil
	body, err := json.Marshal(spec)
	if err != nil {
		return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %s of run %s: %w", n.ID, n.RunID, err)
	}
	var result any // NULL until a result is set
	if n.Result != nil {
		if result, err = json.Marshal(n.Result); err != nil {
			return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %s of run %s: %w", n.ID, n.RunID, err)
		}
	}
	res, err := w.s.exec(ctx, `INSERT INTO workflow_nodes (run_id, id, seq, body, result) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (run_id, id) DO NOTHING`, n.RunID, n.ID, n.Seq, body, result)
	if err != nil {
		return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %s of run %s: %w", n.ID, n.RunID, err)
	}
	if k, _ := res.RowsAffected(); k == 1 {
		return n, true, nil
	}
	// Taken by a committed row, which is never deleted: reading it outside
	// the insert is safe.
	existing, err := w.getNode(ctx, n.RunID, n.ID)
	if err != nil {
		return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %s of run %s: reading existing: %w", n.ID, n.RunID, err)
	}
	return existing, false, nil
}

func (w *Workflows) getNode(ctx context.Context, runID, id string) (contracts.WorkflowNode, error) {
	rows, err := w.s.query(ctx, `SELECT body, result FROM workflow_nodes WHERE run_id = ? AND id = ?`, runID, id)
	if err != nil {
		return contracts.WorkflowNode{}, err
	}
	nodes, err := scanNodes(rows)
	if err != nil {
		return contracts.WorkflowNode{}, err
	}
	if len(nodes) == 0 {
		return contracts.WorkflowNode{}, contracts.ErrNotFound
	}
	return nodes[0], nil
}

// SetNodeResult records the node's result unless it has one: the first
// result wins and later calls are no-ops. ErrNotFound if the node is absent.
func (w *Workflows) SetNodeResult(ctx context.Context, runID, nodeID string, r contracts.NodeResult) error {
	result, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("setting result of workflow node %s of run %s: %w", nodeID, runID, err)
	}
	res, err := w.s.exec(ctx, `UPDATE workflow_nodes SET result = ? WHERE run_id = ? AND id = ? AND result IS NULL`,
		result, runID, nodeID)
	if err != nil {
		return fmt.Errorf("setting result of workflow node %s of run %s: %w", nodeID, runID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	row, err := w.s.queryRow(ctx, `SELECT 1 FROM workflow_nodes WHERE run_id = ? AND id = ?`, runID, nodeID)
	if err == nil {
		var one int
		err = row.Scan(&one)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("setting result of workflow node %s of run %s: %w", nodeID, runID, contracts.ErrNotFound)
	case err != nil:
		return fmt.Errorf("setting result of workflow node %s of run %s: %w", nodeID, runID, err)
	}
	return nil // it has a result already: the first one wins
}

// ListNodes returns the run's nodes in Seq order (ties: id order), each
// with its result if it has one.
func (w *Workflows) ListNodes(ctx context.Context, runID string) ([]contracts.WorkflowNode, error) {
	rows, err := w.s.query(ctx, `SELECT body, result FROM workflow_nodes WHERE run_id = ? ORDER BY seq, id`, runID)
	if err != nil {
		return nil, fmt.Errorf("listing nodes of workflow run %s: %w", runID, err)
	}
	out, err := scanNodes(rows)
	if err != nil {
		return nil, fmt.Errorf("listing nodes of workflow run %s: %w", runID, err)
	}
	return out, nil
}

// scanNodes decodes (body, result) rows and closes rows.
func scanNodes(rows *sql.Rows) ([]contracts.WorkflowNode, error) {
	defer rows.Close()
	var out []contracts.WorkflowNode
	for rows.Next() {
		var body, result []byte
		if err := rows.Scan(&body, &result); err != nil {
			return nil, err
		}
		var n contracts.WorkflowNode
		if err := json.Unmarshal(body, &n); err != nil {
			return nil, fmt.Errorf("decoding stored node: %w", err)
		}
		if result != nil {
			n.Result = new(contracts.NodeResult)
			if err := json.Unmarshal(result, n.Result); err != nil {
				return nil, fmt.Errorf("decoding result of node %s: %w", n.ID, err)
			}
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
