package turn_test

import (
	"context"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// A cancel that lands after the model phase's closing batch committed and
// before the chained tools phase starts (a request from another process
// arriving at that moment). The tools phase is handed the record the model
// phase wrote — without the cancel: it must see that the record is no
// longer current, not run the call of a turn already CANCELLED.
func TestACancelBeforeAChainedToolsPhaseRunsNoCall(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:shell"})
	orig := h.RT.Workers.Handle
	var sub contracts.Submission
	cancelled := false
	h.RT.Workers.Handle = func(ctx context.Context, m contracts.Message) error {
		if m.Kind == contracts.QueueTools && !cancelled {
			cancelled = true
			got, err := h.RT.Engine.Cancel(context.Background(), sub.SessionID, sub.ID, "stop")
			if err != nil || got.Phase != contracts.PhaseCancelled {
				t.Fatalf("cancel: %s %v", got.Phase, err)
			}
		}
		return orig(ctx, m)
	}
	sub = h.Submit(s.ID, "echo ran >> side.txt")
	h.Drain()
	if !cancelled {
		t.Fatal("the tools phase never ran")
	}
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCancelled {
		t.Fatalf("phase %s", got.Phase)
	}
	if f := h.File(s.ID, "side.txt"); f != "" {
		t.Fatalf("the call of a turn cancelled before its tools phase began ran: side.txt = %q; events %v", f, eventTypes(t, h, sub.ID))
	}
}

// counting counts the model calls of a client.
type counting struct {
	contracts.ModelClient
	calls int
}

func (c *counting) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	c.calls++
	return c.ModelClient.Stream(ctx, req, emit)
}

// The same between a tools phase and its chained model phase: no model is
// called (no stream bought) for a turn already CANCELLED.
func TestACancelBeforeAChainedModelPhaseCallsNoModel(t *testing.T) {
	var c *counting
	h := enginetest.New(t, func(p *assemble.Ports) {
		c = &counting{ModelClient: p.Models["scripted"]}
		p.Models["counting"] = c
	})
	s := h.Session(contracts.SessionSpec{Model: "counting:shell"})
	orig := h.RT.Workers.Handle
	var sub contracts.Submission
	calls := -1
	h.RT.Workers.Handle = func(ctx context.Context, m contracts.Message) error {
		if m.Kind == contracts.QueueModel && m.Step == 1 && calls < 0 {
			calls = c.calls
			if _, err := h.RT.Engine.Cancel(context.Background(), sub.SessionID, sub.ID, "stop"); err != nil {
				t.Fatal(err)
			}
		}
		return orig(ctx, m)
	}
	sub = h.Submit(s.ID, "true")
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCancelled || calls < 0 {
		t.Fatalf("phase %s, calls %d", got.Phase, calls)
	}
	if c.calls != calls {
		t.Fatalf("model called %d more time(s) after the turn was cancelled", c.calls-calls)
	}
}
