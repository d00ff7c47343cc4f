package dynamo

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A transcript node is one item NODE#<id> / NODE, immutable once written.

const skNode = "NODE"

func nodePK(id string) string { return "NODE#" + id }

// PutNode stores n unless a node with its id exists (then it is a no-op).
func (s *Store) PutNode(ctx context.Context, n contracts.Node) error {
	if n.ID == "" {
		return fmt.Errorf("putting transcript node: empty id: %w", contracts.ErrInvalid)
	}
	body, err := s.encode(ctx, n)
	if err != nil {
		return fmt.Errorf("putting transcript node %s: %w", n.ID, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           s.table,
		Item:                with(key(nodePK(n.ID), skNode), body, item{"parent": str(n.Parent)}),
		ConditionExpression: new("attribute_not_exists(pk)"),
	})
	if _, ok := conditionFailed(err); ok {
		return nil // create-if-absent: the first write wins
	}
	if err != nil {
		return fmt.Errorf("putting transcript node %s: %w", n.ID, err)
	}
	return nil
}

// GetNode returns the node (consistent read) or ErrNotFound.
func (s *Store) GetNode(ctx context.Context, id string) (contracts.Node, error) {
	n, err := s.getNode(ctx, id)
	if err != nil {
		return contracts.Node{}, fmt.Errorf("getting transcript node %s: %w", id, err)
	}
	return n, nil
}

func (s *Store) getNode(ctx context.Context, id string) (contracts.Node, error) {
	it, err := s.getItem(ctx, nodePK(id), skNode)
	if err != nil {
		return contracts.Node{}, err
	}
	if it == nil {
		return contracts.Node{}, contracts.ErrNotFound
	}
	var n contracts.Node
	if err := s.decode(ctx, it, &n); err != nil {
		return contracts.Node{}, err
	}
	return n, nil
}

// Path returns the nodes from the root to leaf, one consistent GetItem per
// node. An empty leaf is the empty path. A missing leaf or ancestor is
// ErrNotFound; a cyclic parent chain is ErrInvalid.
func (s *Store) Path(ctx context.Context, leaf string) ([]contracts.Node, error) {
	var path []contracts.Node // leaf first while collecting
	seen := map[string]bool{}
	for id := leaf; id != ""; {
		if seen[id] {
			return nil, fmt.Errorf("reading transcript path to %s: cycle at node %s: %w", leaf, id, contracts.ErrInvalid)
		}
		seen[id] = true
		n, err := s.getNode(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("reading transcript path to %s: node %s: %w", leaf, id, err)
		}
		path = append(path, n)
		id = n.Parent
	}
	slices.Reverse(path)
	return path, nil
}
