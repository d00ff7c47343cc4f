package turn

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Tree returns every node of the session's transcript tree reachable from
// a turn's leaf — every branch a turn or a fork wrote — in depth-first
// order: a parent before its children, siblings oldest first. A node written by a turn whose process died before
// recording it as its leaf is not reachable, and not returned.
func (e *Engine) Tree(ctx context.Context, sessionID string) ([]contracts.Node, error) {
	subs, err := e.Journal.ListSubmissions(ctx, sessionID, "", 0)
	if err != nil {
		return nil, fmt.Errorf("listing submissions of session %s: %w", sessionID, err)
	}
	seen := map[string]contracts.Node{}
	for _, sub := range subs {
		if sub.Leaf == "" {
			continue
		}
		if _, ok := seen[sub.Leaf]; ok {
			continue
		}
		path, err := e.Transcript.Path(ctx, sub.Leaf)
		if err != nil {
			return nil, fmt.Errorf("reading transcript to %s: %w", sub.Leaf, err)
		}
		for _, n := range path {
			seen[n.ID] = n
		}
	}
	children := map[string][]contracts.Node{} // by parent id; "" holds the roots
	for _, n := range seen {
		children[n.Parent] = append(children[n.Parent], n)
	}
	for _, kids := range children {
		slices.SortFunc(kids, func(a, b contracts.Node) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
	}
	out := make([]contracts.Node, 0, len(seen))
	stack := slices.Clone(children[""])
	slices.Reverse(stack)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, n)
		kids := slices.Clone(children[n.ID])
		slices.Reverse(kids)
		stack = append(stack, kids...)
	}
	return out, nil
}
