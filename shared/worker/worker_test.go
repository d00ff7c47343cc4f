package worker_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/worker"
)

func newStore(t *testing.T) (*sqlite.Store, *enginetest.ManualClock) {
	t.Helper()
	clock := enginetest.NewClock(enginetest.Start)
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

func msg(session, sub string) contracts.Message {
	return contracts.Message{Kind: contracts.QueueModel, SessionID: session, SubmissionID: sub, Phase: contracts.PhaseModel, Version: 1}
}

func send(t *testing.T, q contracts.Queue, m contracts.Message) {
	t.Helper()
	if err := q.Send(context.Background(), contracts.QueueModel, m); err != nil {
		t.Fatal(err)
	}
}

func receiveAll(t *testing.T, q contracts.Queue) []contracts.Delivery {
	t.Helper()
	ds, err := q.Receive(context.Background(), contracts.QueueModel, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestOnce(t *testing.T) {
	const vis = 30 * time.Second
	cases := []struct {
		name    string
		handler func(context.Context, contracts.Message) error
		deleted bool
	}{
		{"handled message is deleted", func(context.Context, contracts.Message) error { return nil }, true},
		{"failed message stays in flight", func(context.Context, contracts.Message) error { return errors.New("boom") }, false},
		{"handler panic is a failure", func(context.Context, contracts.Message) error { panic("handler exploded") }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store, clock := newStore(t)
			var got []contracts.Message
			p := &worker.Pool{Queue: store, Visibility: vis, Handle: func(ctx context.Context, m contracts.Message) error {
				got = append(got, m)
				return c.handler(ctx, m)
			}}
			want := msg("ses_1", "sub_1")
			send(t, store, want)

			n, err := p.Once(context.Background(), contracts.QueueModel, 10)
			if err != nil || n != 1 {
				t.Fatalf("Once = %d, %v; want 1, nil", n, err)
			}
			if len(got) != 1 || got[0] != want {
				t.Fatalf("handler got %+v, want one %+v", got, want)
			}
			// Within the visibility timeout nothing is delivered either way.
			clock.Advance(vis - time.Second)
			if ds := receiveAll(t, store); len(ds) != 0 {
				t.Fatalf("message visible before the visibility timeout: %+v", ds)
			}
			clock.Advance(2 * time.Second)
			ds := receiveAll(t, store)
			if c.deleted {
				if len(ds) != 0 {
					t.Fatalf("handled message was redelivered: %+v", ds)
				}
				return
			}
			if len(ds) != 1 || ds[0].Message != want || ds[0].ReceiveCount != 2 {
				t.Fatalf("want the failed message redelivered (receive count 2), got %+v", ds)
			}
		})
	}
}

func TestOnceHandlesEachMessageAndReportsCount(t *testing.T) {
	store, clock := newStore(t)
	handled := map[string]int{}
	p := &worker.Pool{Queue: store, Handle: func(_ context.Context, m contracts.Message) error {
		handled[m.SubmissionID]++
		if m.SubmissionID == "sub_bad" {
			return errors.New("boom")
		}
		return nil
	}}
	send(t, store, msg("ses_a", "sub_a"))
	send(t, store, msg("ses_b", "sub_bad"))
	send(t, store, msg("ses_c", "sub_c"))

	if n, err := p.Once(context.Background(), contracts.QueueModel, 2); err != nil || n != 2 {
		t.Fatalf("Once(max 2) = %d, %v", n, err)
	}
	if n, err := p.Once(context.Background(), contracts.QueueModel, 10); err != nil || n != 1 {
		t.Fatalf("second Once = %d, %v", n, err)
	}
	if n, err := p.Once(context.Background(), contracts.QueueModel, 10); err != nil || n != 0 {
		t.Fatalf("Once on an empty queue = %d, %v", n, err)
	}
	if handled["sub_a"] != 1 || handled["sub_bad"] != 1 || handled["sub_c"] != 1 {
		t.Fatalf("handled %v", handled)
	}
	clock.Advance(time.Hour)
	ds := receiveAll(t, store)
	if len(ds) != 1 || ds[0].Message.SubmissionID != "sub_bad" {
		t.Fatalf("only the failed message should remain, got %+v", ds)
	}
}

type failingQueue struct{ contracts.Queue }

func (failingQueue) Receive(context.Context, string, int, time.Duration) ([]contracts.Delivery, error) {
	return nil, errors.New("queue down")
}

func TestOnceReceiveError(t *testing.T) {
	p := &worker.Pool{Queue: failingQueue{}, Handle: func(context.Context, contracts.Message) error {
		t.Error("handler called without a message")
		return nil
	}}
	if n, err := p.Once(context.Background(), contracts.QueueModel, 1); err == nil || n != 0 {
		t.Fatalf("Once = %d, %v; want 0 and an error", n, err)
	}
}

func TestRun(t *testing.T) {
	store, clock := newStore(t)
	sigs := &worker.Signals{}
	q := worker.NotifyQueue{Queue: store, Signals: sigs}
	handled := make(chan contracts.Message)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &worker.Pool{
		Queue: q, Queues: []string{contracts.QueueModel, contracts.QueueTools}, Concurrency: 1,
		Wake: sigs.Wait,
		Poll: time.Hour, // only a wake-up can make the workers look again
		Handle: func(ctx context.Context, m contracts.Message) error {
			select {
			case handled <- m:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}
	done := make(chan struct{})
	go func() {
		p.Run(ctx)
		close(done)
	}()

	wait := func(want contracts.Message) {
		t.Helper()
		select {
		case got := <-handled:
			if got != want {
				t.Fatalf("handled %+v, want %+v", got, want)
			}
		case <-time.After(hangGuard):
			t.Fatalf("message %s not handled", want.SubmissionID)
		}
	}
	for i, sub := range []string{"sub_1", "sub_2", "sub_3"} {
		m := msg("ses_"+sub, sub)
		queue := contracts.QueueModel
		if i == 1 {
			m.Kind, queue = contracts.QueueTools, contracts.QueueTools
		}
		if err := q.Send(ctx, queue, m); err != nil {
			t.Fatal(err)
		}
		wait(m)
	}

	cancel()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("Run did not return after its context was cancelled")
	}
	// sub_1 was handled by the model queue's only worker before it took
	// sub_3, so its delete is done: it never comes back.
	clock.Advance(time.Hour)
	for _, d := range receiveAll(t, store) {
		if d.Message.SubmissionID == "sub_1" {
			t.Fatalf("handled message redelivered: %+v", d)
		}
	}
}
