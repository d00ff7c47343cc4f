package turn_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

// held is a model whose stream blocks until released (or its context ends),
// so a test can act while a handler holds its lease.
type held struct {
	inner    *scripted.Client
	started  chan struct{}
	release  chan struct{}
	streamed chan error // the stream's end: nil, or the context's error
}

func newHeld() *held {
	return &held{inner: scripted.New(), started: make(chan struct{}, 8), release: make(chan struct{}), streamed: make(chan error, 8)}
}

func (m *held) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	m.started <- struct{}{}
	select {
	case <-m.release:
		m.streamed <- nil
		return m.inner.Stream(ctx, req, emit)
	case <-ctx.Done():
		m.streamed <- ctx.Err()
		return contracts.ModelResponse{}, ctx.Err()
	}
}

// leaseWorld is a harness whose heartbeat ticks by hand.
type leaseWorld struct {
	h     *enginetest.Harness
	model *held
	ticks chan time.Time
	done  chan struct{} // closed when the background drain returns
}

func newLeaseWorld(t *testing.T) *leaseWorld {
	w := &leaseWorld{model: newHeld(), ticks: make(chan time.Time)}
	w.h = enginetest.New(t, func(p *assemble.Ports) { p.Models["held"] = w.model })
	w.h.RT.Engine.Heartbeat = func(every time.Duration) (<-chan time.Time, func()) {
		if every != turn.DefaultLeaseTTL/3 {
			t.Errorf("heartbeat every %v, want a third of the TTL (%v)", every, turn.DefaultLeaseTTL/3)
		}
		return w.ticks, func() {}
	}
	return w
}

// start submits a turn and drains in the background until its stream holds.
func (w *leaseWorld) start(t *testing.T) contracts.Submission {
	t.Helper()
	sub := w.h.Submit(w.h.Session(contracts.SessionSpec{Model: "held:plain", Tools: []contracts.ToolConfig{}}).ID, "hello")
	w.done = make(chan struct{})
	go func() { defer close(w.done); w.h.Drain() }()
	<-w.model.started
	return w.h.Get(sub.ID)
}

// tick delivers one heartbeat and waits until the holder has acted on it
// (the next tick can only be delivered once the holder reads again).
func (w *leaseWorld) tick() {
	w.ticks <- w.h.Clock.Now()
}

// A holder renews its lease on every heartbeat, by one TTL from the
// clock's now, so a stream that outlasts many TTLs is never taken over;
// repair leaves it alone; the turn commits with one model call.
func TestLeaseRenewedWhileStreaming(t *testing.T) {
	w := newLeaseWorld(t)
	sub := w.start(t)
	if got := sub.LeaseUntil.Sub(w.h.Clock.Now()); got != turn.DefaultLeaseTTL {
		t.Fatalf("lease taken for %v, want %v", got, turn.DefaultLeaseTTL)
	}
	for i := range 10 { // 10 × TTL/3 of streaming: more than three TTLs
		w.h.Clock.Advance(turn.DefaultLeaseTTL / 3)
		w.tick()
		w.tick() // the second tick is read only after the first renewal finished
		got := w.h.Get(sub.ID)
		if want := w.h.Clock.Now().Add(turn.DefaultLeaseTTL); !got.LeaseUntil.Equal(want) || got.LeaseOwner != sub.LeaseOwner {
			t.Fatalf("after heartbeat %d: lease %s until %v, want %s until %v", i, got.LeaseOwner, got.LeaseUntil, sub.LeaseOwner, want)
		}
		if !got.UpdatedAt.Equal(sub.UpdatedAt) || got.Attempt != sub.Attempt {
			t.Fatalf("a renewal counted as progress or an attempt: updated %v→%v, attempt %d→%d", sub.UpdatedAt, got.UpdatedAt, sub.Attempt, got.Attempt)
		}
		if rep := w.h.Repair(); rep.Redriven != 0 {
			t.Fatalf("repair re-drove a turn whose lease is renewed: %+v", rep)
		}
	}
	close(w.model.release)
	<-w.done
	w.h.Drain()
	if got := w.h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("turn %s (%s), want COMMITTED", got.Phase, got.Error)
	}
	if n := w.model.inner.Calls(); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}

// A holder whose lease was taken from it (here broken, as after it lapsed)
// learns so at its next heartbeat: its stream is abandoned and it stops
// without writing; the turn is re-driven and commits on a new attempt.
func TestLostLeaseStopsTheHolder(t *testing.T) {
	w := newLeaseWorld(t)
	sub := w.start(t)
	if _, err := journal.Break(context.Background(), w.h.Store, sub, w.h.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	w.tick()
	if err := <-w.model.streamed; err == nil {
		t.Fatal("the stream went on after the lease was lost")
	}
	<-w.done
	got := w.h.Get(sub.ID)
	if got.Phase != contracts.PhaseModel || got.Step != sub.Step || got.LeaseOwner != "" || got.Version != sub.Version+1 {
		t.Fatalf("after losing its lease the holder wrote: %+v (want MODEL, no lease, version %d)", got, sub.Version+1)
	}
	close(w.model.release) // the next attempt streams at once
	w.h.Clock.Advance(time.Hour)
	if rep := w.h.Repair(); rep.Redriven != 1 {
		t.Fatalf("repair %+v, want the turn re-driven", rep)
	}
	w.h.Drain()
	if got := w.h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("turn %s (%s), want COMMITTED", got.Phase, got.Error)
	}
	if starts, calls := len(w.model.started), w.model.inner.Calls(); starts != 1 || calls != 1 {
		t.Fatalf("after the first attempt: %d more streams started, %d answered; want the one new attempt", starts, calls)
	}
}

// panics is a model whose stream panics (a bug, or a crash point in the
// tests): the handler's panic is recovered by whoever called it.
type panics struct{}

func (panics) Stream(context.Context, contracts.ModelRequest, func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	panic("model client bug")
}

// A handler that panics while holding its lease stops its heartbeat: no
// renewal outlives the handler (else the lease of a dead run would never
// lapse, and the turn would never be re-driven).
func TestPanickingHolderStopsItsHeartbeat(t *testing.T) {
	h := enginetest.New(t, func(p *assemble.Ports) { p.Models["panics"] = panics{} })
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	stopped := make(chan struct{})
	h.RT.Engine.Heartbeat = func(time.Duration) (<-chan time.Time, func()) {
		return make(chan time.Time), func() { close(stopped) }
	}
	sub := h.Submit(h.Session(contracts.SessionSpec{Model: "panics:x", Tools: []contracts.ToolConfig{}}).ID, "hello")
	func() {
		defer func() { _ = recover() }()
		if _, err := h.RT.Workers.Once(context.Background(), contracts.QueueModel, 1); err != nil {
			t.Log(err)
		}
	}()
	<-stopped // hangs (and the test times out) if the heartbeat outlived the panic
	if got := h.Get(sub.ID); got.LeaseOwner == "" {
		t.Fatalf("the lease was not taken before the panic: %+v", got)
	}
}
