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
