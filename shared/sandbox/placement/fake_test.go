package placement_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
)

// memSessions is an in-memory Sessions with the journal's contract: updates
// conditional on Version. before, when set, runs inside UpdateSession
// before the version check — a hook for a concurrent writer.
type memSessions struct {
	mu      sync.Mutex
	m       map[string]contracts.Session
	updates int
	before  func(s *contracts.Session)
}

func newMem(ids ...string) *memSessions {
	m := &memSessions{m: map[string]contracts.Session{}}
	for _, id := range ids {
		m.m[id] = contracts.Session{ID: id, Version: 1}
	}
	return m
}

func (m *memSessions) GetSession(ctx context.Context, id string) (contracts.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[id]
	if !ok {
		return contracts.Session{}, fmt.Errorf("session %s: %w", id, contracts.ErrNotFound)
	}
	return s, nil
}

func (m *memSessions) UpdateSession(ctx context.Context, s contracts.Session, expected int64) (contracts.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.updates++
	cur, ok := m.m[s.ID]
	if !ok {
		return contracts.Session{}, fmt.Errorf("session %s: %w", s.ID, contracts.ErrNotFound)
	}
	if m.before != nil {
		m.before(&cur)
		m.m[s.ID] = cur
	}
	if cur.Version != expected {
		return contracts.Session{}, fmt.Errorf("session %s at %d: %w", s.ID, expected, contracts.ErrConflict)
	}
	s.Version = expected + 1
	m.m[s.ID] = s
	return s, nil
}
