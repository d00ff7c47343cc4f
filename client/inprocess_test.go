package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// In-process (WithHandler: the runtime's API called directly, as
// cmd/cairn's embedded mode does) a turn is followed by long-poll and by
// SSE — the answer streams through the pipe — and a stream the caller
// stops ends the handler's request.
func TestInProcess(t *testing.T) {
	s := newCairn(t)
	c, err := client.New("", client.WithHandler(s.RT.API), client.WithBearer(s.Token))
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "http://embedded" {
		t.Fatalf("base %q", c.BaseURL())
	}
	ctx := context.Background()
	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:demo"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sse := range []bool{false, true} {
		sub, err := c.Submit(ctx, sess.ID, "do the demo", client.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []contracts.Event
		end, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{SSE: sse}, collect(&mu, &got))
		if err != nil || end.Phase != contracts.PhaseCommitted {
			t.Fatalf("sse=%v: %+v %v", sse, end, err)
		}
		checkEvents(t, c, sess.ID, sub.ID, got)
	}

	// A session stream waits for turns that never come: the caller's
	// stop must end it (and its handler) at once, not at the next write.
	start := time.Now()
	seen := 0
	err = c.FollowSession(ctx, sess.ID, client.SessionFollowOptions{}, func(se client.SessionEvent) error {
		if seen++; se.TurnEnd != nil && se.TurnEnd.Phase == contracts.PhaseCommitted && seen > 10 {
			return client.ErrStop
		}
		return nil
	})
	if err != nil || time.Since(start) > 10*time.Second {
		t.Fatalf("FollowSession: %v after %s", err, time.Since(start))
	}
	// A context that ends stops an in-process stream waiting for events.
	sub, err := c.Submit(ctx, sess.ID, "do the demo", client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	_, err = c.Follow(cctx, sess.ID, sub.ID, client.FollowOptions{SSE: true}, func(contracts.Event) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled follow: %v", err)
	}
}
