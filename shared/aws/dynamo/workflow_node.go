package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A node is one item RUN#<run> / NODE#<node>: keyed by id, so PutNode is
// create-if-absent on exactly the node's identity (the same id at another
// seq is the same node), and listed in Seq order through lsi1
// (lsk=NODE#<seq:010>#<node>, a strongly consistent Query). The body holds
// the node without its result; the result is its own attribute (result, or
// result_blob when claim-checked), set once by a conditional update, so the
// first result wins and the body is never rewritten.

const (
	nodePrefix     = "NODE#"
	attrResult     = "result"      // the NodeResult as JSON (S)
	attrResultBlob = "result_blob" // claim check of the NodeResult (S)
)

func nodeSK(id string) string { return nodePrefix + id }

func nodeLSK(seq int, id string) string { return fmt.Sprintf("%s%010d#%s", nodePrefix, seq, id) }

// PutNode stores n unless the run has a node with its id; then it returns
// that node, unchanged (the ALL_OLD item of the failed put), and
// created=false — unless that node is this call's own write, retried by
// the SDK after its answer was lost (its write id), then created.
func (w *Workflows) PutNode(ctx context.Context, n contracts.WorkflowNode) (contracts.WorkflowNode, bool, error) {
	if n.RunID == "" || n.ID == "" || n.Seq < 0 {
		return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %q of run %q at seq %d: %w", n.ID, n.RunID, n.Seq, contracts.ErrInvalid)
	}
	it, err := w.s.nodeItem(ctx, n)
	if err != nil {
		return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %s of run %s: %w", n.ID, n.RunID, err)
	}
	old, err := w.s.claim(ctx, it)
	if err != nil {
		return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %s of run %s: %w", n.ID, n.RunID, err)
	}
	if old == nil {
		return n, true, nil
	}
	existing, err := w.s.decodeNode(ctx, old)
	if err != nil {
		return contracts.WorkflowNode{}, false, fmt.Errorf("putting workflow node %s of run %s: reading existing: %w", n.ID, n.RunID, err)
	}
	return existing, false, nil
}

// nodeItem is the item of n: the body without the result, the result (if
// any) in its own attribute.
func (s *Store) nodeItem(ctx context.Context, n contracts.WorkflowNode) (item, error) {
	res := n.Result
	n.Result = nil
	body, err := s.encodeWhole(ctx, n)
	if err != nil {
		return nil, err
	}
	it := with(key(runPK(n.RunID), nodeSK(n.ID)), body, item{
		attrSeq: num(int64(n.Seq)),
		attrLSK: str(nodeLSK(n.Seq, n.ID)),
	})
	if res != nil {
		name, v, err := s.resultAttr(ctx, *res)
		if err != nil {
			return nil, err
		}
		it[name] = v
	}
	return it, nil
}

// resultAttr encodes r as the attribute result, or result_blob when it is
// claim-checked.
func (s *Store) resultAttr(ctx context.Context, r contracts.NodeResult) (string, types.AttributeValue, error) {
	enc, err := s.encodeWhole(ctx, r)
	if err != nil {
		return "", nil, err
	}
	if ref, ok := enc[attrBlob]; ok {
		return attrResultBlob, ref, nil
	}
	return attrResult, enc[attrBody], nil
}

// decodeNode reads a node item: its body, then its result if set.
func (s *Store) decodeNode(ctx context.Context, it item) (contracts.WorkflowNode, error) {
	var n contracts.WorkflowNode
	if err := s.decode(ctx, it, &n); err != nil {
		return contracts.WorkflowNode{}, err
	}
	var enc item
	if v, ok := it[attrResult]; ok {
		enc = item{attrBody: v}
	} else if v, ok := it[attrResultBlob]; ok {
		enc = item{attrBlob: v}
	}
	if enc != nil {
		n.Result = new(contracts.NodeResult)
		if err := s.decode(ctx, enc, n.Result); err != nil {
			return contracts.WorkflowNode{}, fmt.Errorf("decoding result of node %s: %w", n.ID, err)
		}
	}
	return n, nil
}

// SetNodeResult records the node's result unless it has one: the first
// result wins and later calls are no-ops. ErrNotFound if the node is absent.
// One conditional UpdateItem; a result above the claim check threshold goes
// to the BlobStore first (a losing one leaves an unreferenced blob).
func (w *Workflows) SetNodeResult(ctx context.Context, runID, nodeID string, r contracts.NodeResult) error {
	name, v, err := w.s.resultAttr(ctx, r)
	if err != nil {
		return fmt.Errorf("setting result of workflow node %s of run %s: %w", nodeID, runID, err)
	}
	_, err = w.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        w.s.table,
		Key:              key(runPK(runID), nodeSK(nodeID)),
		UpdateExpression: new("SET #r = :r"),
		ConditionExpression: new("attribute_exists(pk) AND attribute_not_exists(#result)" +
			" AND attribute_not_exists(#resultBlob)"),
		ExpressionAttributeNames: map[string]string{
			"#r": name, "#result": attrResult, "#resultBlob": attrResultBlob,
		},
		ExpressionAttributeValues:           item{":r": v},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, failed := conditionFailed(err); failed {
		if len(old) > 0 {
			return nil // it has a result: the first one wins
		}
		// Absent, or a backend that omits ALL_OLD: read it.
		if old, err = w.s.getItem(ctx, runPK(runID), nodeSK(nodeID)); err == nil && old == nil {
			err = contracts.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("setting result of workflow node %s of run %s: %w", nodeID, runID, err)
	}
	return nil
}

// ListNodes returns the run's nodes in Seq order (ties: id order), each
// with its result if it has one: a strongly consistent Query of lsi1.
func (w *Workflows) ListNodes(ctx context.Context, runID string) ([]contracts.WorkflowNode, error) {
	var out []contracts.WorkflowNode
	err := w.s.query(ctx, &dynamodb.QueryInput{
		IndexName:                 new(LSI),
		ConsistentRead:            new(true),
		KeyConditionExpression:    new("pk = :pk AND begins_with(lsk, :prefix)"),
		ExpressionAttributeValues: item{":pk": str(runPK(runID)), ":prefix": str(nodePrefix)},
	}, 0, func(it item) (bool, error) {
		n, err := w.s.decodeNode(ctx, it)
		if err != nil {
			return false, err
		}
		out = append(out, n)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing nodes of workflow run %s: %w", runID, err)
	}
	return out, nil
}
