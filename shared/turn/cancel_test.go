package turn_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

// blocking is a model that streams until its context ends: it says when it
// started and how its context ended.
type blocking struct {
	started chan struct{}
	cause   chan error
}

func newBlocking() *blocking {
	return &blocking{started: make(chan struct{}, 1), cause: make(chan error, 1)}
}

func (b *blocking) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	if err := emit(contracts.ModelEvent{Type: contracts.ModelText, Text: "thinking…"}); err != nil {
		return contracts.ModelResponse{}, err
	}
	b.started <- struct{}{}
	<-ctx.Done()
	b.cause <- context.Cause(ctx)
	return contracts.ModelResponse{}, ctx.Err()
}

func withModel(name string, c contracts.ModelClient) func(*assemble.Ports) {
	return func(p *assemble.Ports) { p.Models[name] = c }
}

// once runs one delivery of queue q in the background; the returned channel
// yields its error when the handler returns.
func once(h *enginetest.Harness, q string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.RT.Workers.Once(context.Background(), q, 1)
		done <- err
	}()
	return done
}

func eventTypes(t *testing.T, h *enginetest.Harness, subID string) []string {
	t.Helper()
	evs, err := h.Store.ListEvents(context.Background(), subID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func mustCancel(t *testing.T, h *enginetest.Harness, sub contracts.Submission, reason string) contracts.Submission {
	t.Helper()
	got, err := h.RT.Engine.Cancel(context.Background(), sub.SessionID, sub.ID, reason)
	if err != nil {
		t.Fatalf("cancel %s: %v", sub.ID, err)
	}
	if got.Phase != contracts.PhaseCancelled {
		t.Fatalf("cancel returned phase %s", got.Phase)
	}
	return got
}

func TestCancelAbandonsAStreamingModelCall(t *testing.T) {
	m := newBlocking()
	h := enginetest.New(t, withModel("block", m))
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	s := h.Session(contracts.SessionSpec{Model: "block:forever"})
	sub := h.Submit(s.ID, "think hard")
	done := once(h, contracts.QueueModel)
	<-m.started
	ctx := contracts.WithPrincipal(context.Background(), contracts.Principal{Name: "alice"})
	got, err := h.RT.Engine.Cancel(ctx, s.ID, sub.ID, "too slow")
	if err != nil || got.Phase != contracts.PhaseCancelled || got.Error != "cancelled by alice: too slow" {
		t.Fatalf("cancel = %s %q, %v", got.Phase, got.Error, err)
	}
	if cause := <-m.cause; !errors.Is(cause, turn.ErrCancelled) {
		t.Fatalf("the stream's context ended with %v, want turn.ErrCancelled", cause)
	}
	if err := <-done; err != nil {
		t.Fatalf("model handler: %v", err)
	}
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCancelled || got.Cancel == nil || got.Cancel.By != "alice" {
		t.Fatalf("after the handler: %s, cancel %+v", got.Phase, got.Cancel)
	}
	types := eventTypes(t, h, sub.ID)
	if types[len(types)-1] != contracts.EventCancelled && types[len(types)-1] != contracts.EventStreamDiscarded {
		t.Fatalf("events %v: want the stream discarded and the turn cancelled", types)
	}
	if !strings.Contains(strings.Join(types, ","), "stream_discarded") {
		t.Fatalf("events %v: the abandoned stream's text is not discarded", types)
	}
	// Idempotent, and the session is free.
	if again := mustCancel(t, h, sub, "again"); again.Error != got.Error {
		t.Fatalf("second cancel changed the record: %q", again.Error)
	}
	if sess, _ := h.Store.GetSession(context.Background(), s.ID); sess.Active != "" {
		t.Fatalf("session still active: %s", sess.Active)
	}
}

// startedSignal wraps the journal: every MarkToolStarted is announced after
// it is written.
type startedSignal struct {
	contracts.JournalStore
	started chan string
}

func (j startedSignal) MarkToolStarted(ctx context.Context, subID string, step int, callID string) error {
	err := j.JournalStore.MarkToolStarted(ctx, subID, step, callID)
	j.started <- callID
	return err
}

func TestCancelKillsARunningTool(t *testing.T) {
	started := make(chan string, 4)
	h := enginetest.New(t, func(p *assemble.Ports) { p.Journal = startedSignal{p.Journal, started} })
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	s := h.Session(contracts.SessionSpec{Model: "scripted:shell"})
	// The call's process tells its pid through a FIFO: reading it waits
	// until the call runs.
	ws := filepath.Join(h.SandboxDir, s.ID)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "pid"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := h.Submit(s.ID, "echo $$ > pid; exec sleep 300")
	if _, err := h.RT.Workers.Once(context.Background(), contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	done := once(h, contracts.QueueTools)
	<-started
	b, err := os.ReadFile(filepath.Join(ws, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid %q: %v", b, err)
	}
	mustCancel(t, h, sub, "")
	if err := <-done; err != nil {
		t.Fatalf("tools handler: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the cancelled call's process %d is still there (kill 0: %v)", pid, err)
	}
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseCancelled || got.Error != "cancelled by system" {
		t.Fatalf("phase %s %q", got.Phase, got.Error)
	}
	types := strings.Join(eventTypes(t, h, sub.ID), ",")
	if !strings.Contains(types, "tool_started,tool_interrupted") && !strings.Contains(types, "tool_interrupted") {
		t.Fatalf("events %s: the killed call has no terminal event", types)
	}
}

// parkedSession returns a session whose turn is parked at an approval, and
// that turn's record.
func parkedSession(t *testing.T, h *enginetest.Harness) (contracts.Session, contracts.Submission) {
	t.Helper()
	s := h.Session(contracts.SessionSpec{Model: "scripted:approval", Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}}})
	sub := h.Submit(s.ID, "needs approval")
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseTools || len(got.Approvals) != 1 {
		t.Fatalf("not parked: %s %+v", got.Phase, got.Approvals)
	}
	return s, got
}

func TestCancelParkedAndQueuedTurns(t *testing.T) {
	h := enginetest.New(t)
	s, first := parkedSession(t, h)
	second := h.Submit(s.ID, "queued two")
	third := h.Submit(s.ID, "queued three")
	if got := h.Get(second.ID); got.Phase != contracts.PhaseAccepted {
		t.Fatalf("second is %s, want ACCEPTED behind the parked turn", got.Phase)
	}
	// A queued turn is cancelled without disturbing the parked one.
	mustCancel(t, h, second, "not needed")
	if got := h.Get(first.ID); got.Phase != contracts.PhaseTools {
		t.Fatalf("first moved to %s", got.Phase)
	}
	// The parked one leaves the park; the third then starts.
	mustCancel(t, h, first, "")
	if p, _ := h.RT.Engine.Pending(context.Background(), s.ID); len(p) != 0 {
		t.Fatalf("approvals still pending: %+v", p)
	}
	h.Drain()
	if got := h.Get(third.ID); got.Phase != contracts.PhaseTools {
		t.Fatalf("third is %s, want started (parked at its own approval)", got.Phase)
	}
	if h.File(s.ID, "approved.txt") != "" {
		t.Fatal("a cancelled turn's call ran")
	}
	types := strings.Join(eventTypes(t, h, first.ID), ",")
	if !strings.HasSuffix(types, "tool_interrupted,cancelled") {
		t.Fatalf("parked turn's events %s", types)
	}
	// The cancelled turn's approval is no longer pending.
	if _, err := h.RT.Engine.Decide(context.Background(), s.ID, first.Approvals[0].ID, contracts.Allow, ""); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("deciding a cancelled turn's approval: %v, want ErrNotFound", err)
	}
	// A finished turn is not cancelled.
	h2 := enginetest.New(t)
	done := h2.Accept("scripted:plain")
	h2.Drain()
	if _, err := h2.RT.Engine.Cancel(context.Background(), done.SessionID, done.ID, ""); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("cancelling a committed turn: %v, want ErrConflict", err)
	}
	if _, err := h2.RT.Engine.Cancel(context.Background(), s.ID, done.ID, ""); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("cancelling through another session: %v, want ErrNotFound", err)
	}
}

// raceJournal runs fire right after the turn's k-th record write
// (submission or session) is durable: at once for a write on its own, once
// its batch committed for a write inside one (raceBatch) — in the turn's
// own goroutine, between that write and the turn's next, so the cancel
// lands in each gap between the turn's writes in turn.
type raceJournal struct {
	contracts.JournalStore
	n       *atomic.Int32
	k       int32
	fire    func()
	pending *atomic.Bool // the k-th write is in a batch not committed yet
}

type raceBatchKey struct{}

func (j raceJournal) hit(ctx context.Context) {
	if j.n.Add(1) != j.k {
		return
	}
	if ctx.Value(raceBatchKey{}) != nil {
		j.pending.Store(true)
		return
	}
	j.fire()
}

func (j raceJournal) UpdateSubmission(ctx context.Context, s contracts.Submission, v int64) (contracts.Submission, error) {
	out, err := j.JournalStore.UpdateSubmission(ctx, s, v)
	j.hit(ctx)
	return out, err
}

func (j raceJournal) UpdateSession(ctx context.Context, s contracts.Session, v int64) (contracts.Session, error) {
	out, err := j.JournalStore.UpdateSession(ctx, s, v)
	j.hit(ctx)
	return out, err
}

// raceBatch runs the fire its journal left pending once the outermost
// batch returned (committed or not).
type raceBatch struct {
	contracts.Batcher
	j *raceJournal
}

func (b raceBatch) Batch(ctx context.Context, fn func(ctx context.Context) error) error {
	if ctx.Value(raceBatchKey{}) != nil {
		return b.Batcher.Batch(ctx, fn)
	}
	err := b.Batcher.Batch(context.WithValue(ctx, raceBatchKey{}, true), fn)
	if b.j.pending.CompareAndSwap(true, false) {
		b.j.fire()
	}
	return err
}

// A cancel landing after each of a turn's record writes in turn — in the
// model phase, at the terminal write, after it — ends the turn in exactly
// one terminal phase, and the session and the events agree with it.
func TestCancelRacingCommit(t *testing.T) {
	outcomes := map[contracts.Phase]int{}
	for k := int32(1); k <= 12; k++ {
		var n atomic.Int32
		var h *enginetest.Harness
		var cancelErr error
		fired := false
		j := raceJournal{n: &n, k: k, pending: &atomic.Bool{}}
		h = enginetest.New(t, func(p *assemble.Ports) {
			j.JournalStore = p.Journal
			p.Journal = &j
			p.Batch = raceBatch{Batcher: p.Batch, j: &j}
		})
		j.fire = func() {
			fired = true
			sub, err := h.RT.Ports.Journal.ListSubmissions(context.Background(), sessionOf(h), "", 1)
			if err != nil || len(sub) == 0 {
				t.Errorf("k=%d: listing the turn: %v %v", k, sub, err)
				return
			}
			_, cancelErr = h.RT.Engine.Cancel(context.Background(), sub[0].SessionID, sub[0].ID, "race")
		}
		sub := h.Accept("scripted:plain")
		h.Drain()
		h.Drain()
		got := h.Get(sub.ID)
		sess, _ := h.Store.GetSession(context.Background(), sub.SessionID)
		types := strings.Join(eventTypes(t, h, sub.ID), ",")
		outcomes[got.Phase]++
		switch got.Phase {
		case contracts.PhaseCancelled:
			if cancelErr != nil || sess.Head != "" || strings.Contains(types, "committed") {
				t.Fatalf("k=%d: cancelled, but cancel said %v, head %q leaf %q, events %s", k, cancelErr, sess.Head, got.Leaf, types)
			}
		case contracts.PhaseCommitted:
			if (fired && !errors.Is(cancelErr, contracts.ErrConflict)) || sess.Head != got.Leaf || strings.Contains(types, "cancelled") {
				t.Fatalf("k=%d: committed, but cancel said %v, head %q (leaf %q), events %s", k, cancelErr, sess.Head, got.Leaf, types)
			}
		default:
			t.Fatalf("k=%d: ended %s", k, got.Phase)
		}
		if sess.Active != "" {
			t.Fatalf("k=%d: session still active (%s)", k, sess.Active)
		}
	}
	if outcomes[contracts.PhaseCancelled] == 0 || outcomes[contracts.PhaseCommitted] == 0 {
		t.Fatalf("outcomes %v: the race never went both ways", outcomes)
	}
	t.Logf("outcomes %v", outcomes)
}

// sessionOf is the id of the harness's only session.
func sessionOf(h *enginetest.Harness) string {
	ss, _ := h.Store.ListSessions(context.Background(), "", 1)
	return ss[0].ID
}

func acceptFrom(parent string) turn.AcceptOptions { return turn.AcceptOptions{Parent: parent} }

// BenchmarkCancelStreamingTurn measures how long a streaming model call
// goes on after its turn is cancelled: from Cancel's return to the
// stream's context ending (the holder's watch, every DefaultWatchEvery).
func BenchmarkCancelStreamingTurn(b *testing.B) {
	m := newBlocking()
	h := enginetest.New(b, withModel("block", m))
	s := h.Session(contracts.SessionSpec{Model: "block:forever"})
	var total time.Duration
	for b.Loop() {
		sub := h.Submit(s.ID, "think")
		done := once(h, contracts.QueueModel)
		<-m.started
		if _, err := h.RT.Engine.Cancel(context.Background(), s.ID, sub.ID, "bench"); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		<-m.cause
		total += time.Since(t0)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-abandon/op")
}

// entered wraps a model client and says when a stream starts.
type entered struct {
	contracts.ModelClient
	started chan struct{}
}

func (m entered) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	m.started <- struct{}{}
	return m.ModelClient.Stream(ctx, req, emit)
}

// The scripted model with a minute of latency per chunk: the cancel ends
// the stream long before its first chunk (the handler returning at all
// shows it; an unabandoned stream would take minutes).
func TestCancelAbandonsAScriptedSlowStream(t *testing.T) {
	started := make(chan struct{}, 1)
	h := enginetest.New(t, func(p *assemble.Ports) {
		p.Models["slow"] = entered{p.Models["scripted"], started}
	})
	s := h.Session(contracts.SessionSpec{Model: "slow:plain@1m"})
	sub := h.Submit(s.ID, "hi")
	done := once(h, contracts.QueueModel)
	<-started
	mustCancel(t, h, sub, "slow")
	if err := <-done; err != nil {
		t.Fatalf("model handler: %v", err)
	}
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCancelled || got.Result != "" {
		t.Fatalf("%s %q", got.Phase, got.Result)
	}
}
