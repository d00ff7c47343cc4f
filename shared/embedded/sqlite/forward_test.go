package sqlite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
)

// received sends m on q and receives it, as a worker holds a message.
func received(t *testing.T, s *sqlite.Store, q string, m contracts.Message) contracts.Delivery {
	t.Helper()
	ctx := context.Background()
	if err := s.Send(ctx, q, m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	ds, err := s.Receive(ctx, q, 1, time.Minute)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Receive = %v, %v", ds, err)
	}
	return ds[0]
}

// TestForwardConsumesTheHandledMessage: the message in flight becomes the
// next one, in flight under a new receipt; the old receipt is gone, and a
// crash now (the receipt expiring) redelivers the new message, not the old.
func TestForwardConsumesTheHandledMessage(t *testing.T) {
	ctx := context.Background()
	clock := newManualClock()
	s := open(t, sqlite.Options{Clock: clock})
	cur := received(t, s, contracts.QueueModel, contracts.Message{Kind: contracts.QueueModel, SessionID: "s", SubmissionID: "sub", Phase: contracts.PhaseModel})
	next := contracts.Message{Kind: contracts.QueueTools, SessionID: "s", SubmissionID: "sub", Phase: contracts.PhaseTools, Version: 3}
	d, ok, consumed, err := s.Forward(ctx, contracts.QueueModel, cur.Receipt, contracts.QueueTools, next, time.Minute)
	if err != nil || !ok || !consumed {
		t.Fatalf("Forward = %+v, ok %v, consumed %v, %v", d, ok, consumed, err)
	}
	if d.Message != next || d.ReceiveCount != 1 || d.Receipt == cur.Receipt {
		t.Fatalf("forwarded delivery %+v", d)
	}
	if err := s.Delete(ctx, contracts.QueueModel, cur.Receipt); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("Delete(handled message's receipt) = %v, want ErrNotFound: it was consumed", err)
	}
	if ds, _ := s.Receive(ctx, contracts.QueueModel, 10, time.Minute); len(ds) != 0 {
		t.Fatalf("the handled message is still on its queue: %+v", ds)
	}
	clock.Advance(2 * time.Minute) // the forwarded message's holder died
	ds, err := s.Receive(ctx, contracts.QueueTools, 10, time.Minute)
	if err != nil || len(ds) != 1 || ds[0].Message != next || ds[0].ReceiveCount != 2 {
		t.Fatalf("after its visibility, Receive(tools) = %+v, %v; want the forwarded message, received twice", ds, err)
	}
	if err := s.Delete(ctx, contracts.QueueTools, ds[0].Receipt); err != nil {
		t.Fatalf("Delete: %v", err)
	}
}

// TestForwardKeepsFIFOAndDedup: with another message of the group already
// on the target queue, or a stale receipt, Forward is a plain send (the
// handled message untouched); a duplicate changes nothing.
func TestForwardKeepsFIFOAndDedup(t *testing.T) {
	ctx := context.Background()
	clock := newManualClock()
	s := open(t, sqlite.Options{Clock: clock})
	waiting := contracts.Message{Kind: contracts.QueueTools, SessionID: "s", SubmissionID: "sub-0", Phase: contracts.PhaseTools}
	if err := s.Send(ctx, contracts.QueueTools, waiting); err != nil {
		t.Fatal(err)
	}
	cur := received(t, s, contracts.QueueModel, contracts.Message{Kind: contracts.QueueModel, SessionID: "s", SubmissionID: "sub", Phase: contracts.PhaseModel})
	next := contracts.Message{Kind: contracts.QueueTools, SessionID: "s", SubmissionID: "sub", Phase: contracts.PhaseTools, Version: 3}
	if _, ok, consumed, err := s.Forward(ctx, contracts.QueueModel, cur.Receipt, contracts.QueueTools, next, time.Minute); err != nil || ok || consumed {
		t.Fatalf("Forward behind a waiting message: ok %v, consumed %v, %v; want a visible send", ok, consumed, err)
	}
	ds, err := s.Receive(ctx, contracts.QueueTools, 10, time.Minute)
	if err != nil || len(ds) != 1 || ds[0].Message != waiting {
		t.Fatalf("Receive(tools) = %+v, %v; want the earlier message of the group first", ds, err)
	}
	if err := s.Delete(ctx, contracts.QueueTools, ds[0].Receipt); err != nil {
		t.Fatal(err)
	}
	if ds, _ = s.Receive(ctx, contracts.QueueTools, 10, time.Minute); len(ds) != 1 || ds[0].Message != next {
		t.Fatalf("then %+v; want the sent one", ds)
	}
	// A duplicate of an accepted send: dropped, the handled message kept.
	if _, ok, consumed, err := s.Forward(ctx, contracts.QueueModel, cur.Receipt, contracts.QueueTools, next, time.Minute); err != nil || ok || consumed {
		t.Fatalf("Forward of a duplicate: ok %v, consumed %v, %v", ok, consumed, err)
	}
	if err := s.Delete(ctx, contracts.QueueModel, cur.Receipt); err != nil {
		t.Fatalf("Delete(handled message) after a dropped duplicate: %v", err)
	}
	// A stale receipt: a claimed send, nothing consumed.
	other := received(t, s, contracts.QueueModel, contracts.Message{Kind: contracts.QueueModel, SessionID: "t", SubmissionID: "sub-t", Phase: contracts.PhaseModel})
	stale := other.Receipt + "x"
	d, ok, consumed, err := s.Forward(ctx, contracts.QueueModel, stale, contracts.QueueCommit, contracts.Message{Kind: contracts.QueueCommit, SessionID: "t", SubmissionID: "sub-t", Phase: contracts.PhaseCommit}, time.Minute)
	if err != nil || !ok || consumed || d.Receipt == "" {
		t.Fatalf("Forward with a stale receipt = %+v, ok %v, consumed %v, %v; want claimed, nothing consumed", d, ok, consumed, err)
	}
	if err := s.Delete(ctx, contracts.QueueModel, other.Receipt); err != nil {
		t.Fatalf("Delete(message whose receipt was not the forward's): %v", err)
	}
}

// TestReceiveDeadLettersSpentHeads: a head received MaxReceives times goes
// to the DLQ at the next receive, and the group's next message is
// delivered in its place in the same receive.
func TestReceiveDeadLettersSpentHeads(t *testing.T) {
	ctx := context.Background()
	clock := newManualClock()
	s := open(t, sqlite.Options{Clock: clock, MaxReceives: 2})
	q := contracts.QueueModel
	first := contracts.Message{Kind: q, SessionID: "s", SubmissionID: "a"}
	second := contracts.Message{Kind: q, SessionID: "s", SubmissionID: "b"}
	for _, m := range []contracts.Message{first, second} {
		if err := s.Send(ctx, q, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 2; i++ {
		ds, err := s.Receive(ctx, q, 10, time.Second)
		if err != nil || len(ds) != 1 || ds[0].Message != first {
			t.Fatalf("receive %d = %+v, %v", i, ds, err)
		}
		clock.Advance(2 * time.Second)
	}
	ds, err := s.Receive(ctx, q, 10, time.Second)
	if err != nil || len(ds) != 1 || ds[0].Message != second || ds[0].ReceiveCount != 1 {
		t.Fatalf("after two receives of the first = %+v, %v; want the second message", ds, err)
	}
	dl, err := s.Receive(ctx, contracts.DLQ(q), 10, time.Second)
	if err != nil || len(dl) != 1 || dl[0].Message != first {
		t.Fatalf("DLQ = %+v, %v; want the spent first message", dl, err)
	}
}
