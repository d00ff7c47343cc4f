package turn

import (
	"context"
	"fmt"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Spec cache: every model and tools phase needs its session's spec, which
// never changes once the session is created (nor do its id, owner,
// workflow reference and MCP pin, once the first model phase has listed
// the stdio servers). Read whole each phase, the session record — with
// its sandbox record, head and version, which do change — is decoded
// again and again; the engine keeps the immutable part of the sessions it
// ran lately and reads a session only the first time this process sees it.
const specCacheSessions = 1024

type specCache struct {
	mu    sync.Mutex
	specs map[string]contracts.Session // session id → its immutable part
	order []string                     // insertion order, oldest first
}

// sessionSpec returns the session's immutable part: ID, Owner, Spec,
// Workflow, its MCP pin and CreatedAt. Head, Active, Sandbox, Version and UpdatedAt are
// left zero: a caller that needs them reads the session.
func (e *Engine) sessionSpec(ctx context.Context, id string) (contracts.Session, error) {
	c := &e.specs
	c.mu.Lock()
	s, ok := c.specs[id]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	full, err := e.Journal.GetSession(ctx, id)
	if err != nil {
		return contracts.Session{}, fmt.Errorf("reading session %s: %w", id, err)
	}
	s = contracts.Session{ID: full.ID, Owner: full.Owner, Spec: full.Spec, Workflow: full.Workflow, MCP: full.MCP, CreatedAt: full.CreatedAt}
	if len(unlisted(s)) > 0 {
		return s, nil // its pin grows at the first model phase: not immutable yet
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.specs == nil {
		c.specs = map[string]contracts.Session{}
	}
	if _, had := c.specs[id]; !had {
		if len(c.order) >= specCacheSessions {
			delete(c.specs, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, id)
	}
	c.specs[id] = s
	return s, nil
}
