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
