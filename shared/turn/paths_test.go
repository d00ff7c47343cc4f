package turn_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// countReads counts the transcript reads a model step makes.
type countReads struct {
	contracts.TranscriptStore
	reads atomic.Int64
}

func (c *countReads) GetNode(ctx context.Context, id string) (contracts.Node, error) {
	c.reads.Add(1)
	return c.TranscriptStore.GetNode(ctx, id)
}

// CreateNode forwards, so the counter does not hide the store's NodeCreator.
func (c *countReads) CreateNode(ctx context.Context, n contracts.Node) (bool, error) {
	return c.TranscriptStore.(contracts.NodeCreator).CreateNode(ctx, n)
}

func (c *countReads) Path(ctx context.Context, leaf string) ([]contracts.Node, error) {
	c.reads.Add(1)
	return c.TranscriptStore.Path(ctx, leaf)
}

// In one transaction the engine extends its cached path with the nodes it
// wrote and advanced to: a session's later turns read no transcript node,
// and the cached path is exactly what a store read returns.
func TestWrittenNodesExtendTheCachedPath(t *testing.T) {
	c := &countReads{}
	h := enginetest.New(t, func(p *assemble.Ports) {
		c.TranscriptStore = p.Transcript
		p.Transcript = c
	})
	h.RT.Engine.StartedAfter = time.Hour
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	turn := func(prompt string) {
		t.Helper()
		sub := h.Submit(s.ID, prompt)
		h.Drain()
		if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
			t.Fatalf("%s: phase %s %s", prompt, got.Phase, got.Error)
		}
	}
	turn("first") // a cold cache reads the path once
	if c.reads.Load() == 0 {
		t.Fatal("the first step read no transcript: the cache cannot have been cold")
	}
	c.reads.Store(0)
	turn("second")
	turn("third")
	if n := c.reads.Load(); n != 0 {
		t.Fatalf("two later turns read %d transcript nodes or paths; want 0 (the cache holds what the engine wrote)", n)
	}
	cached, stored := headPaths(t, h, s.ID)
	if len(stored) != 12 || !reflect.DeepEqual(cached, stored) {
		t.Fatalf("cached path (%d nodes) differs from the stored one (%d nodes):\n%+v\n%+v", len(cached), len(stored), cached, stored)
	}
}

// headPaths returns the path to the session's head as the engine's cache
// gives it and as the store does.
func headPaths(t *testing.T, h *enginetest.Harness, sessionID string) (cached, stored []contracts.Node) {
	t.Helper()
	ctx := context.Background()
	sess, err := h.Store.GetSession(ctx, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	if cached, err = h.RT.Engine.Path(ctx, sessionID, sess.Head); err != nil {
		t.Fatal(err)
	}
	if stored, err = h.Store.Path(ctx, sess.Head); err != nil {
		t.Fatal(err)
	}
	return cached, stored
}

// A node of the id a step writes may already be stored with other content
// (a batch whose advance lost commits its node all the same): the write is
// ignored, and the cache must hold the stored node, not the one in hand —
// the next step's request is built from it.
func TestAStoredNodeOfTheSameIDIsNotShadowedByTheCache(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Engine.StartedAfter = time.Hour
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	h.Submit(s.ID, "first")
	h.Drain() // the cache holds the session's path
	ctx := context.Background()
	sub := h.Submit(s.ID, "second")
	stale := contracts.Node{ID: ids.Node(sub.ID, 0, contracts.RoleAssistant), Parent: ids.Node(sub.ID, 0, contracts.RoleUser),
		SessionID: s.ID, SubmissionID: sub.ID, Role: contracts.RoleAssistant,
		Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "the answer of an attempt whose advance lost"}}}
	if err := h.Store.PutNode(ctx, stale); err != nil {
		t.Fatal(err)
	}
	h.Drain()
	if cached, stored := headPaths(t, h, s.ID); !reflect.DeepEqual(cached, stored) {
		t.Fatalf("the cached path differs from the stored one:\ncached %+v\nstored %+v", cached, stored)
	}
}

// afterStream runs hook once, after the model's first stream returned and
// before its phase's closing write.
type afterStream struct {
	contracts.ModelClient
	hook func()
	once sync.Once
}

func (a *afterStream) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	resp, err := a.ModelClient.Stream(ctx, req, emit)
	a.once.Do(a.hook)
	return resp, err
}

// A model phase whose submission moved on while it streamed (another
// worker took it over) loses its advance; its closing write must not leave
// its assistant node behind either: the next attempt's node has the same
// id, and a create-if-absent write would keep this one's answer in the
// durable transcript in place of the answer the journal goes on with.
func TestAModelPhaseThatLosesItsAdvanceWritesNoNode(t *testing.T) {
	m := &afterStream{}
	h := enginetest.New(t, func(p *assemble.Ports) {
		m.ModelClient = p.Models["scripted"]
		p.Models["scripted"] = m
	})
	h.RT.Engine.StartedAfter = time.Hour
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	var sub contracts.Submission
	m.hook = func() {
		h.Set(sub.ID, func(s *contracts.Submission) { // taken over: another owner, a new attempt
			s.LeaseOwner, s.LeaseUntil, s.Attempt = "other-worker", s.LeaseUntil.Add(time.Hour), s.Attempt+1
		})
	}
	sub = h.Submit(s.ID, "go")
	h.Drain()
	if _, err := h.Store.GetNode(context.Background(), ids.Node(sub.ID, 0, contracts.RoleAssistant)); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("the assistant node of the attempt that lost its advance: err = %v, want ErrNotFound", err)
	}
}
