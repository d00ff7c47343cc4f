package turn

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Path cache: a model step needs the whole transcript path, root → leaf.
// Read whole every step, its store reads grow with the session; but nodes
// never change once written (create-if-absent, first write wins), so the
// engine keeps the latest path it read per session and reads only the
// nodes added since (a step adds two: the assistant's and the tools'). A
// miss — the first step in this process, a fork, an evicted session — reads
// the path whole, as before.
//
// In one transaction (Deps.Batch) the engine also extends the cache with
// the nodes it writes itself, once the write that holds both the node and
// the advance onto it has committed: a node this write stored (not one
// already there) whose advance the same write won is the stored node, so
// the next step reads nothing.
const (
	// pathWalk bounds the nodes read one by one before a whole read is
	// cheaper.
	pathWalk = 16
	// pathCacheNodes and pathCacheSessions bound what is kept in memory.
	pathCacheNodes    = 20_000
	pathCacheSessions = 512
)

type pathCache struct {
	mu    sync.Mutex
	paths map[string]cachedPath // session id → its latest path
	order []string              // sessions, least recently used first
	nodes int
}

type cachedPath struct {
	leaf  string
	nodes []contracts.Node
}

// path returns the transcript path to leaf in the session.
func (e *Engine) path(ctx context.Context, sessionID, leaf string) ([]contracts.Node, error) {
	c := &e.paths
	if cp, ok := c.get(sessionID); ok {
		if cp.leaf == leaf {
			return cp.nodes, nil
		}
		var tail []contracts.Node // leaf first
		id := leaf
		for range pathWalk {
			if id == cp.leaf {
				full := c.extend(sessionID, cp, leaf, tail)
				return full[:len(full):len(full)], nil
			}
			if id == "" {
				break
			}
			n, err := e.Transcript.GetNode(ctx, id)
			if errors.Is(err, contracts.ErrNotFound) {
				break // the whole read says which ancestor is missing
			}
			if err != nil {
				return nil, fmt.Errorf("reading transcript node %s: %w", id, err)
			}
			tail = append(tail, n)
			id = n.Parent
		}
	}
	p, err := e.Transcript.Path(ctx, leaf)
	if err != nil {
		return nil, err
	}
	c.put(sessionID, leaf, p)
	return p[:len(p):len(p)], nil
}

func (c *pathCache) get(sessionID string) (cachedPath, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp, ok := c.paths[sessionID]
	if ok {
		c.touch(sessionID)
	}
	cp.nodes = cp.nodes[:len(cp.nodes):len(cp.nodes)] // a caller's append never writes into the cache
	return cp, ok
}

// extend caches base's path with tail (leaf first) added as the path to
// leaf. While base is still the cached path, the nodes are appended in its
// backing array (amortised: no copy of the whole path per step), under the
// lock — every slice handed out is capped at its length, so no holder sees
// those slots, and a later extension of the same base (no longer cached)
// copies.
func (c *pathCache) extend(sessionID string, base cachedPath, leaf string, tail []contracts.Node) []contracts.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var full []contracts.Node
	if cur, ok := c.paths[sessionID]; ok && cur.leaf == base.leaf && len(cur.nodes) == len(base.nodes) {
		full = cur.nodes
	} else {
		full = make([]contracts.Node, len(base.nodes), len(base.nodes)+len(tail)+8)
		copy(full, base.nodes)
	}
	for i := len(tail) - 1; i >= 0; i-- {
		full = append(full, tail[i])
	}
	c.putLocked(sessionID, leaf, full)
	return full
}

func (c *pathCache) put(sessionID, leaf string, nodes []contracts.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(sessionID, leaf, nodes)
}

func (c *pathCache) putLocked(sessionID, leaf string, nodes []contracts.Node) {
	if c.paths == nil {
		c.paths = map[string]cachedPath{}
	}
	if old, ok := c.paths[sessionID]; ok {
		c.nodes -= len(old.nodes)
	}
	c.paths[sessionID] = cachedPath{leaf: leaf, nodes: nodes}
	c.nodes += len(nodes)
	c.touch(sessionID)
	for (c.nodes > pathCacheNodes || len(c.order) > pathCacheSessions) && len(c.order) > 1 {
		victim := c.order[0]
		c.order = c.order[1:]
		c.nodes -= len(c.paths[victim].nodes)
		delete(c.paths, victim)
	}
}

// touch moves the session to the most recently used end.
func (c *pathCache) touch(sessionID string) {
	for i, s := range c.order {
		if s == sessionID {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.order = append(c.order, sessionID)
}

// wrote collects, within one batch, the nodes the engine wrote (tentative)
// and those whose advance it won (kept, in write order).
type wrote struct {
	tentative []contracts.Node
	kept      []contracts.Node
}

type wroteKey struct{}

// inBatch reports whether ctx is inside the engine's batch (e.batch with
// Deps.Batch set).
func (e *Engine) inBatch(ctx context.Context) bool {
	_, in := ctx.Value(wroteKey{}).(*wrote)
	return in
}

// putNode writes n and, in a batch, notes it for the path cache when this
// write stored it (contracts.NodeCreator): a node of that id already there
// — left by a batch whose advance lost, say — may differ, and a read
// returns that one.
func (e *Engine) putNode(ctx context.Context, n contracts.Node) error {
	w, in := ctx.Value(wroteKey{}).(*wrote)
	nc, can := e.Transcript.(contracts.NodeCreator)
	if !in || !can {
		return e.Transcript.PutNode(ctx, n)
	}
	created, err := nc.CreateNode(ctx, n)
	if err != nil {
		return err
	}
	if created {
		w.tentative = append(w.tentative, n)
	}
	return nil
}

// advanced notes that the submission now points at leaf, by a conditional
// write this batch won: a node of that id it wrote is the stored one.
func (e *Engine) advanced(ctx context.Context, leaf string) {
	w, ok := ctx.Value(wroteKey{}).(*wrote)
	if !ok {
		return
	}
	for i, n := range w.tentative {
		if n.ID == leaf {
			w.kept = append(w.kept, n)
			w.tentative = append(w.tentative[:i], w.tentative[i+1:]...)
			return
		}
	}
}

// grow extends each cached path whose leaf is a kept node's parent. A node
// is cached in the form the store keeps it (storedNode), so a hit hands
// out what a read would.
func (c *pathCache) grow(nodes []contracts.Node) {
	for _, n := range nodes {
		cp, ok := c.peek(n.SessionID)
		if !ok || cp.leaf != n.Parent {
			continue
		}
		stored, ok := storedNode(n)
		if !ok {
			continue
		}
		c.extend(n.SessionID, cp, n.ID, []contracts.Node{stored})
	}
}

// peek is get without touching the recency order.
func (c *pathCache) peek(sessionID string) (cachedPath, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp, ok := c.paths[sessionID]
	cp.nodes = cp.nodes[:len(cp.nodes):len(cp.nodes)]
	return cp, ok
}
