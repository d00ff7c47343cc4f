package sqlite

import (
	"context"
	"fmt"
	"slices"

	"github.com/cairnrun/cairn/shared/contracts"
)

// pathChunk is how many ancestors one Path query fetches. A longer path
// takes several queries; a corrupt (cyclic) parent chain costs at most one
// chunk before it is detected.
const pathChunk = 1024

// PutNode stores n unless a node with its id exists (then it is a no-op).
func (s *Store) PutNode(ctx context.Context, n contracts.Node) error {
	_, err := s.CreateNode(ctx, n)
	return err
}

// CreateNode is PutNode that says whether it stored n
// (contracts.NodeCreator).
func (s *Store) CreateNode(ctx context.Context, n contracts.Node) (bool, error) {
	if n.ID == "" {
		return false, fmt.Errorf("putting transcript node: empty id: %w", contracts.ErrInvalid)
	}
	body, err := jsonc.Marshal(n)
	if err != nil {
		return false, fmt.Errorf("putting transcript node %s: %w", n.ID, err)
	}
	res, err := s.exec(ctx, `INSERT OR IGNORE INTO nodes (id, parent, body) VALUES (?, ?, ?)`, n.ID, n.Parent, body)
	if err != nil {
		return false, fmt.Errorf("putting transcript node %s: %w", n.ID, err)
	}
	created, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("putting transcript node %s: %w", n.ID, err)
	}
	return created == 1, nil
}

// GetNode returns the node or ErrNotFound.
func (s *Store) GetNode(ctx context.Context, id string) (contracts.Node, error) {
	var n contracts.Node
	if err := s.getBody(ctx, &n, `SELECT body FROM nodes WHERE id = ?`, id); err != nil {
		return contracts.Node{}, fmt.Errorf("getting transcript node %s: %w", id, err)
	}
	return n, nil
}

// Path returns the nodes from the root to leaf, fetching up to pathChunk
// ancestors per query. An empty leaf is the empty path. A missing leaf or
// ancestor is ErrNotFound; a cyclic parent chain is ErrInvalid.
func (s *Store) Path(ctx context.Context, leaf string) ([]contracts.Node, error) {
	var (
		path []contracts.Node // leaf first while collecting
		seen = map[string]bool{}
		next = leaf
	)
	for next != "" {
		from := next
		n, parent, err := s.pathSegment(ctx, from, seen, &path)
		if err != nil {
			return nil, fmt.Errorf("reading transcript path to %s: %w", leaf, err)
		}
		next = parent
		switch {
		case n == 0 && from == leaf:
			return nil, fmt.Errorf("reading transcript path: leaf %s: %w", leaf, contracts.ErrNotFound)
		case n == 0 || n < pathChunk && next != "":
			missing := from
			if n > 0 {
				missing = next
			}
			return nil, fmt.Errorf("reading transcript path to %s: ancestor %s: %w", leaf, missing, contracts.ErrNotFound)
		}
	}
	slices.Reverse(path)
	return path, nil
}

// pathSegment appends from and up to pathChunk-1 of its ancestors to path,
// leaf first, and returns how many it found and the parent of the last one.
func (s *Store) pathSegment(ctx context.Context, from string, seen map[string]bool, path *[]contracts.Node) (int, string, error) {
	rows, err := s.query(ctx, `WITH RECURSIVE chain (id, parent, body, depth) AS (
			SELECT id, parent, body, 0 FROM nodes WHERE id = ?
			UNION ALL
			SELECT n.id, n.parent, n.body, c.depth + 1
			FROM nodes n JOIN chain c ON n.id = c.parent
			WHERE c.depth < ?
		)
		SELECT id, parent, body FROM chain ORDER BY depth`, from, pathChunk-1)
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	count, last := 0, ""
	for rows.Next() {
		var id string
		var body []byte
		if err := rows.Scan(&id, &last, &body); err != nil {
			return 0, "", err
		}
		if seen[id] {
			return 0, "", fmt.Errorf("cycle at node %s: %w", id, contracts.ErrInvalid)
		}
		seen[id] = true
		var n contracts.Node
		if err := jsonc.Unmarshal(body, &n); err != nil {
			return 0, "", fmt.Errorf("decoding transcript node %s: %w", id, err)
		}
		*path = append(*path, n)
		count++
	}
	return count, last, rows.Err()
}
