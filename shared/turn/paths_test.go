package turn_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
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
	ctx := context.Background()
	sess, err := h.Store.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	cached, err := h.RT.Engine.Path(ctx, s.ID, sess.Head)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := h.Store.Path(ctx, sess.Head)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 12 || !reflect.DeepEqual(cached, stored) {
		t.Fatalf("cached path (%d nodes) differs from the stored one (%d nodes):\n%+v\n%+v", len(cached), len(stored), cached, stored)
	}
}
