package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/worker"
)

// hangGuard bounds every wait for a goroutine to act: far beyond what it
// takes on a saturated machine, it only turns a hang into a failure.
const hangGuard = time.Minute

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestSignalBroadcast(t *testing.T) {
	var s worker.Signal
	s.Fire() // no waiter: a no-op, and not remembered
	first := s.Wait()
	if closed(first) {
		t.Fatal("a Fire before Wait must not wake the later waiter")
	}
	if s.Wait() != first {
		t.Fatal("waiters before the same Fire must share one channel")
	}

	const waiters = 16
	var ready, woke sync.WaitGroup
	for range waiters {
		ready.Add(1)
		woke.Add(1)
		go func() {
			ch := s.Wait()
			ready.Done()
			<-ch
			woke.Done()
		}()
	}
	ready.Wait()
	s.Fire()
	done := make(chan struct{})
	go func() {
		woke.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("not every waiter woke")
	}
	if !closed(first) {
		t.Fatal("Fire did not close the waiters' channel")
	}

	fresh := s.Wait()
	if fresh == first || closed(fresh) {
		t.Fatal("a Wait after Fire must get a fresh, open channel")
	}
	s.Fire()
	s.Fire() // a second Fire with no waiter must not panic on a closed channel
	if !closed(fresh) {
		t.Fatal("second Fire did not wake the fresh waiter")
	}
}

type sendErrQueue struct{ contracts.Queue }

func (sendErrQueue) Send(context.Context, string, contracts.Message) error {
	return errors.New("queue down")
}

type appendErrLog struct{ contracts.EventLog }

func (appendErrLog) AppendEvents(context.Context, ...contracts.Event) error {
	return errors.New("log down")
}

func TestSignalsPerName(t *testing.T) {
	var s worker.Signals
	if s.Of(contracts.QueueModel) != s.Of(contracts.QueueModel) {
		t.Fatal("Of must return the same signal for a name")
	}
	if s.Of(contracts.QueueModel) == s.Of(contracts.QueueTools) {
		t.Fatal("different names must get different signals")
	}
	model, tools := s.Wait(contracts.QueueModel), s.Wait(contracts.QueueTools)
	s.Of(contracts.QueueModel).Fire()
	if !closed(model) || closed(tools) {
		t.Fatalf("firing model: model woke %v (want true), tools woke %v (want false)", closed(model), closed(tools))
	}
}

func TestNotifyFiresOnlyOnSuccess(t *testing.T) {
	store, _ := newStore(t)
	ev := contracts.Event{SubmissionID: "sub_1", Key: "k1", Type: contracts.EventStep, At: time.Now()}
	cases := []struct {
		name   string
		call   func(*worker.Signals, *worker.Signal) error
		signal func(*worker.Signals, *worker.Signal) *worker.Signal // the one that must fire
		ok     bool
	}{
		{"queue send succeeds", func(qs *worker.Signals, _ *worker.Signal) error {
			return worker.NotifyQueue{Queue: store, Signals: qs}.Send(context.Background(), contracts.QueueModel, msg("ses_1", "sub_1"))
		}, queueSignal, true},
		{"queue send fails", func(qs *worker.Signals, _ *worker.Signal) error {
			return worker.NotifyQueue{Queue: sendErrQueue{store}, Signals: qs}.Send(context.Background(), contracts.QueueModel, msg("ses_1", "sub_1"))
		}, queueSignal, false},
		{"event append succeeds", func(_ *worker.Signals, s *worker.Signal) error {
			return worker.NotifyEvents{EventLog: store, Signal: s}.AppendEvents(context.Background(), ev)
		}, eventSignal, true},
		{"event append fails", func(_ *worker.Signals, s *worker.Signal) error {
			return worker.NotifyEvents{EventLog: appendErrLog{store}, Signal: s}.AppendEvents(context.Background(), ev)
		}, eventSignal, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			qs, es := &worker.Signals{}, &worker.Signal{}
			target := c.signal(qs, es)
			ch := target.Wait()
			others := []<-chan struct{}{qs.Wait(contracts.QueueTools), qs.Wait(contracts.QueueCommit)}
			if target != es {
				others = append(others, es.Wait())
			}
			err := c.call(qs, es)
			if c.ok != (err == nil) {
				t.Fatalf("error = %v, want ok=%v", err, c.ok)
			}
			if closed(ch) != c.ok {
				t.Fatalf("signal fired = %v, want %v", closed(ch), c.ok)
			}
			for i, o := range others {
				if closed(o) {
					t.Fatalf("unrelated signal %d fired", i)
				}
			}
		})
	}
	// The successful calls reached the wrapped store.
	if ds := receiveAll(t, store); len(ds) != 1 {
		t.Fatalf("queue holds %d messages, want 1", len(ds))
	}
	evs, err := store.ListEvents(context.Background(), "sub_1", 0, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %+v, %v; want 1", evs, err)
	}
}

func queueSignal(qs *worker.Signals, _ *worker.Signal) *worker.Signal {
	return qs.Of(contracts.QueueModel)
}
func eventSignal(_ *worker.Signals, s *worker.Signal) *worker.Signal { return s }

// TestKeyedSignal: a key's Fire wakes its waiters only; a key is held only
// while someone waits on it (a Fire, or the last waiter's done, drops it),
// so keys of ended waits never pile up.
func TestKeyedSignal(t *testing.T) {
	var s worker.KeyedSignal
	s.Fire("a") // nobody waits: a no-op, not remembered
	a1, done1 := s.Wait("a")
	a2, done2 := s.Wait("a")
	b, doneB := s.Wait("b")
	if a1 != a2 || closed(a1) || s.Waiting() != 2 {
		t.Fatalf("two waits of a: one open channel, two keys held (%d)", s.Waiting())
	}
	s.Fire("a")
	if !closed(a1) || closed(b) {
		t.Fatal("a's Fire must wake a's waiters and not b's")
	}
	done1()
	done2()
	done2() // twice: counted once
	if s.Waiting() != 1 {
		t.Fatalf("%d keys held after a fired, want b only", s.Waiting())
	}
	doneB() // b's wait ends without a Fire
	if s.Waiting() != 0 {
		t.Fatalf("%d keys held after every wait ended", s.Waiting())
	}
	next, done := s.Wait("a")
	defer done()
	if closed(next) {
		t.Fatal("a new wait after a Fire must not be woken by it")
	}
}

// TestNotifyEventsWakesEachSubmissionAfterCommit: an append wakes the
// waiters of each submission it appends to — after its batch committed —
// and nobody else's.
func TestNotifyEventsWakesEachSubmissionAfterCommit(t *testing.T) {
	keyed := &worker.KeyedSignal{}
	n := worker.NotifyEvents{EventLog: nopEvents{}, Submissions: keyed}
	a, doneA := keyed.Wait("sub_a")
	defer doneA()
	b, doneB := keyed.Wait("sub_b")
	defer doneB()
	c, doneC := keyed.Wait("sub_c")
	defer doneC()
	batch := worker.DeferredBatcher{Batcher: inlineBatch{}}
	err := batch.Batch(context.Background(), func(ctx context.Context) error {
		if err := n.AppendEvents(ctx, contracts.Event{SubmissionID: "sub_a"}, contracts.Event{SubmissionID: "sub_a"}, contracts.Event{SubmissionID: "sub_b"}); err != nil {
			return err
		}
		if closed(a) || closed(b) {
			t.Error("woken before the batch committed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !closed(a) || !closed(b) || closed(c) {
		t.Fatalf("after commit: a %v b %v c %v, want a and b woken, c not", closed(a), closed(b), closed(c))
	}
}

type nopEvents struct{ contracts.EventLog }

func (nopEvents) AppendEvents(context.Context, ...contracts.Event) error { return nil }

type inlineBatch struct{}

func (inlineBatch) Batch(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }
