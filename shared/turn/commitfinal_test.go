package turn_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// failCommitOnce fails the first write that ends a submission COMMITTED
// (a transient store error) and counts the sends to the commit queue.
type failCommitOnce struct {
	contracts.JournalStore
	contracts.Queue
	armed   atomic.Bool
	commits atomic.Int64
}

func (f *failCommitOnce) UpdateSubmission(ctx context.Context, s contracts.Submission, v int64) (contracts.Submission, error) {
	if s.Phase == contracts.PhaseCommitted && f.armed.CompareAndSwap(true, false) {
		return contracts.Submission{}, context.DeadlineExceeded
	}
	return f.JournalStore.UpdateSubmission(ctx, s, v)
}

func (f *failCommitOnce) Send(ctx context.Context, queue string, m contracts.Message) error {
	if queue == contracts.QueueCommit {
		f.commits.Add(1)
	}
	return f.Queue.Send(ctx, queue, m)
}

// Call by call (the AWS shape: no batch), a final answer is committed in
// the model phase's own run — no commit message — and when that commit
// fails, the model message delivered again commits the record it left in
// COMMIT: once, with one committed event, the session moved on.
func TestAFinalAnswerCommitsWithoutAHop(t *testing.T) {
	f := &failCommitOnce{}
	h := enginetest.NewConfig(t, assemble.Config{}, func(p *assemble.Ports) {
		f.JournalStore, f.Queue = p.Journal, p.Queue
		p.Journal, p.Queue = f, f
		p.Batch = nil // as on AWS
	})
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	sub := h.Submit(s.ID, "first")
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s (%s), want COMMITTED", got.Phase, got.Error)
	}

	f.armed.Store(true)
	next := h.Submit(s.ID, "second")
	h.Drain()
	if got := h.Get(next.ID); got.Phase != contracts.PhaseCommit {
		t.Fatalf("after a failed commit: phase %s, want COMMIT", got.Phase)
	}
	h.Clock.Advance(10 * time.Minute) // the failed delivery's visibility lapses
	h.Drain()
	done := h.Get(next.ID)
	if done.Phase != contracts.PhaseCommitted {
		t.Fatalf("after the model message's redelivery: phase %s (%s), want COMMITTED", done.Phase, done.Error)
	}
	if n := f.commits.Load(); n != 0 {
		t.Errorf("%d sends to the commit queue, want none", n)
	}
	evs, err := h.Store.ListEvents(context.Background(), next.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	committed := 0
	for _, e := range evs {
		if e.Type == contracts.EventCommitted {
			committed++
		}
	}
	if committed != 1 {
		t.Errorf("%d committed events, want 1", committed)
	}
	sess, err := h.Store.GetSession(context.Background(), s.ID)
	if err != nil || sess.Active != "" || sess.Head != done.Leaf {
		t.Errorf("session active %q head %q, want idle at %q (%v)", sess.Active, sess.Head, done.Leaf, err)
	}
}

// flakyModel fails its first fails streams (a throttled provider).
type flakyModel struct {
	contracts.ModelClient
	fails atomic.Int64
}

func (f *flakyModel) Stream(ctx context.Context, r contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	if f.fails.Add(-1) >= 0 {
		return contracts.ModelResponse{}, errors.New("transient: throttled")
	}
	return f.ModelClient.Stream(ctx, r, emit)
}

// failCommits fails the first left writes that end a submission COMMITTED.
type failCommits struct {
	contracts.JournalStore
	left atomic.Int64
}

func (f *failCommits) UpdateSubmission(ctx context.Context, s contracts.Submission, v int64) (contracts.Submission, error) {
	if s.Phase == contracts.PhaseCommitted && f.left.Add(-1) >= 0 {
		return contracts.Submission{}, context.DeadlineExceeded
	}
	return f.JournalStore.UpdateSubmission(ctx, s, v)
}

// The model message's deliveries are shared by its stream and, call by
// call, the commit of its final answer: a stream that took three tries and
// a commit that fails twice dead-letter it. Repair must then commit the
// recorded answer (its own tries, on the commit queue), not fail the turn
// as poison.
func TestACommitThatRunsOutOfModelDeliveriesIsNotPoison(t *testing.T) {
	fm, fc := &flakyModel{}, &failCommits{}
	h := enginetest.NewConfig(t, assemble.Config{}, func(p *assemble.Ports) {
		fm.ModelClient = p.Models["scripted"]
		p.Models["scripted"] = fm
		fc.JournalStore = p.Journal
		p.Journal = fc
		p.Batch = nil // as on AWS
	})
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	fm.fails.Store(3)
	fc.left.Store(2)
	sub := h.Submit(s.ID, "hi")
	for range 20 { // every delivery, each after the last one's visibility lapsed
		h.Drain()
		h.Clock.Advance(10 * time.Minute)
	}
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommit {
		t.Fatalf("after the model message's deliveries: %s (%s), want COMMIT with the answer recorded", got.Phase, got.Error)
	}
	h.Repair()
	h.Drain()
	h.Clock.Advance(10 * time.Minute)
	h.Repair()
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("after repair: %s (%s), want COMMITTED", got.Phase, got.Error)
	}
}
