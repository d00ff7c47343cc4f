package queuetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Harness is one queue under test.
type Harness struct {
	Queue contracts.Queue
	// MaxReceives is the adapter's configured maximum: a message received
	// more often is moved to the DLQ.
	MaxReceives int
	// Advance moves the queue's clock forward by d (a real adapter may
	// sleep).
	Advance func(d time.Duration)
	// DedupWindow is the adapter's deduplication window; 0 means the SQS
	// FIFO default of 5 minutes.
	DedupWindow time.Duration
	// Visibility is the visibility timeout the suite receives with; 0
	// means 30s. An adapter whose Advance is a real wait sets it short
	// (SQS counts whole seconds: use at least 2s).
	Visibility time.Duration
}

func (h Harness) visibility() time.Duration {
	if h.Visibility <= 0 {
		return 30 * time.Second
	}
	return h.Visibility
}

// Run checks a Queue against the contract. newHarness is called once per
// subtest.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness, q string)
	}{
		{"Empty", testEmpty},
		{"SendReceiveDelete", testSendReceiveDelete},
		{"Dedup", testDedup},
		{"DedupWindowExpires", testDedupWindowExpires},
		{"Visibility", testVisibility},
		{"StaleReceipt", testStaleReceipt},
		{"Release", testRelease},
		{"FIFOPerGroup", testFIFOPerGroup},
		{"DeadLetter", testDeadLetter},
		{"ConcurrentReceivers", testConcurrentReceivers},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, withDefaults(newHarness(t)), queueName(t))
		})
	}
	// A queue that can hand a message to its sender as received
	// (contracts.Claimer) keeps that contract too.
	for _, tc := range claimTests {
		t.Run(tc.name, func(t *testing.T) {
			h := withDefaults(newHarness(t))
			c, ok := h.Queue.(contracts.Claimer)
			if !ok {
				return // not a Claimer: nothing of this contract to keep
			}
			tc.fn(t, h, queueName(t), c)
		})
	}
}

func withDefaults(h Harness) Harness {
	if h.DedupWindow == 0 {
		h.DedupWindow = 5 * time.Minute
	}
	return h
}

// queueName is unique to the test and the run.
func queueName(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	return "qt-" + name + "-" + strings.ToLower(rand.Text()[:8])
}

func msg(session, sub string, step int) contracts.Message {
	return contracts.Message{
		Kind: contracts.QueueModel, SessionID: session, SubmissionID: sub,
		Step: step, Phase: contracts.PhaseModel, Version: int64(step + 1),
	}
}

func send(t *testing.T, h Harness, q string, m contracts.Message) {
	t.Helper()
	if err := h.Queue.Send(context.Background(), q, m); err != nil {
		t.Fatalf("Send(%s): %v", m.DedupID(), err)
	}
}

func receive(t *testing.T, h Harness, q string, max int) []contracts.Delivery {
	t.Helper()
	ds, err := h.Queue.Receive(context.Background(), q, max, h.visibility())
	if err != nil {
		t.Fatalf("Receive(%s): %v", q, err)
	}
	return ds
}

func del(t *testing.T, h Harness, q string, d contracts.Delivery) {
	t.Helper()
	if err := h.Queue.Delete(context.Background(), q, d.Receipt); err != nil {
		t.Fatalf("Delete(%s): %v", d.Message.DedupID(), err)
	}
}

func subs(ds []contracts.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Message.SubmissionID
	}
	return out
}

func testEmpty(t *testing.T, h Harness, q string) {
	if ds := receive(t, h, q, 10); len(ds) != 0 {
		t.Errorf("Receive(empty queue) = %v, want none", subs(ds))
	}
}

func testSendReceiveDelete(t *testing.T, h Harness, q string) {
	m := msg("s1", "sub-1", 2)
	m.Nonce = "n1"
	send(t, h, q, m)
	ds := receive(t, h, q, 10)
	if len(ds) != 1 {
		t.Fatalf("Receive returned %d messages, want 1", len(ds))
	}
	d := ds[0]
	if !reflect.DeepEqual(d.Message, m) {
		t.Errorf("Message = %+v, want %+v", d.Message, m)
	}
	if d.ID == "" || d.Receipt == "" || d.ReceiveCount != 1 {
		t.Errorf("Delivery id=%q receipt=%q count=%d, want ids set and count 1", d.ID, d.Receipt, d.ReceiveCount)
	}
	if again := receive(t, h, q, 10); len(again) != 0 {
		t.Errorf("Receive while in flight = %v, want none", subs(again))
	}
	del(t, h, q, d)
	h.Advance(h.visibility() + time.Second)
	if after := receive(t, h, q, 10); len(after) != 0 {
		t.Errorf("Receive after Delete = %v, want none", subs(after))
	}
}

func testDedup(t *testing.T, h Harness, q string) {
	m := msg("s1", "sub-1", 0)
	send(t, h, q, m)
	send(t, h, q, m) // duplicate: accepted and dropped
	other := m
	other.Nonce = "redrive-1" // a deliberate re-drive is a different message
	send(t, h, q, other)

	var got []contracts.Delivery
	for range 3 {
		for _, d := range receive(t, h, q, 10) {
			got = append(got, d)
			del(t, h, q, d)
		}
	}
	if len(got) != 2 || got[0].Message != m || got[1].Message != other {
		t.Fatalf("delivered %+v, want the message once then its re-drive", got)
	}
	// Still within the window after deletion: dropped.
	h.Advance(h.DedupWindow / 2)
	send(t, h, q, m)
	if ds := receive(t, h, q, 10); len(ds) != 0 {
		t.Errorf("duplicate within the window was delivered: %v", subs(ds))
	}
}

func testDedupWindowExpires(t *testing.T, h Harness, q string) {
	m := msg("s1", "sub-1", 0)
	send(t, h, q, m)
	ds := receive(t, h, q, 10)
	if len(ds) != 1 {
		t.Fatalf("Receive returned %d messages, want 1", len(ds))
	}
	del(t, h, q, ds[0])
	h.Advance(h.DedupWindow + time.Second)
	send(t, h, q, m)
	ds = receive(t, h, q, 10)
	if len(ds) != 1 || ds[0].Message != m {
		t.Fatalf("after the dedup window: delivered %v, want the message again", subs(ds))
	}
	if ds[0].ReceiveCount != 1 {
		t.Errorf("ReceiveCount of the re-sent message = %d, want 1", ds[0].ReceiveCount)
	}
}

func testVisibility(t *testing.T, h Harness, q string) {
	send(t, h, q, msg("s1", "sub-1", 0))
	first := receive(t, h, q, 10)
	if len(first) != 1 {
		t.Fatalf("Receive returned %d messages, want 1", len(first))
	}
	h.Advance(h.visibility() / 3)
	if ds := receive(t, h, q, 10); len(ds) != 0 {
		t.Errorf("Receive before the visibility timeout = %v, want none", subs(ds))
	}
	h.Advance(h.visibility())
	second := receive(t, h, q, 10)
	if len(second) != 1 {
		t.Fatalf("Receive after the visibility timeout returned %d messages, want 1", len(second))
	}
	if second[0].ID != first[0].ID || second[0].ReceiveCount != 2 {
		t.Errorf("redelivery id=%s count=%d, want id=%s count=2", second[0].ID, second[0].ReceiveCount, first[0].ID)
	}
	if second[0].Receipt == first[0].Receipt {
		t.Errorf("redelivery reused receipt %q", first[0].Receipt)
	}
	del(t, h, q, second[0])
}

// testStaleReceipt: Delete with a receipt from an earlier receive is
// harmless to call — nil or ErrNotFound, never another error. Whether it
// deletes the message is not part of the contract: SQS documents that such
// a delete succeeds "but the message might not be deleted", and cairn's
// handlers are idempotent, so nothing relies on either outcome.
func testStaleReceipt(t *testing.T, h Harness, q string) {
	send(t, h, q, msg("s1", "sub-1", 0))
	first := receive(t, h, q, 1)
	if len(first) != 1 {
		t.Fatalf("Receive returned %d messages, want 1", len(first))
	}
	h.Advance(h.visibility() + time.Second)
	second := receive(t, h, q, 1)
	if len(second) != 1 {
		t.Fatalf("redelivery: Receive returned %d messages, want 1", len(second))
	}
	if err := h.Queue.Delete(context.Background(), q, first[0].Receipt); err != nil && !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("Delete(stale receipt) = %v, want nil or ErrNotFound", err)
	}
	if err := h.Queue.Delete(context.Background(), q, second[0].Receipt); err != nil && !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("Delete(current receipt) = %v", err)
	}
	if again := receive(t, h, q, 10); len(again) != 0 {
		t.Errorf("message still delivered after Delete with its current receipt: %v", subs(again))
	}
}

func testRelease(t *testing.T, h Harness, q string) {
	send(t, h, q, msg("s1", "sub-1", 0))
	first := receive(t, h, q, 10)
	if len(first) != 1 {
		t.Fatalf("Receive returned %d messages, want 1", len(first))
	}
	if err := h.Queue.Release(context.Background(), q, first[0].Receipt); err != nil {
		t.Fatalf("Release: %v", err)
	}
	again := receive(t, h, q, 10) // no Advance: visible at once
	if len(again) != 1 || again[0].ID != first[0].ID || again[0].ReceiveCount != 2 {
		t.Fatalf("after Release: delivered %+v, want %s with count 2", again, first[0].ID)
	}
	del(t, h, q, again[0])
}

func testFIFOPerGroup(t *testing.T, h Harness, q string) {
	a1, a2, a3 := msg("group-a", "a1", 0), msg("group-a", "a2", 0), msg("group-a", "a3", 0)
	b1 := msg("group-b", "b1", 0)
	for _, m := range []contracts.Message{a1, a2, b1, a3} {
		send(t, h, q, m)
	}

	// Receive everything currently deliverable, deleting nothing.
	var batches [][]contracts.Delivery
	for range 4 {
		ds := receive(t, h, q, 10)
		if len(ds) == 0 {
			break
		}
		batches = append(batches, ds)
	}
	groupA := []string{"a1", "a2", "a3"}
	checkOrder := func(batches [][]contracts.Delivery) map[string]contracts.Delivery {
		t.Helper()
		got := map[string]contracts.Delivery{}
		for _, ds := range batches {
			inBatch := map[string]bool{}
			for _, d := range ds {
				sub := d.Message.SubmissionID
				if _, dup := got[sub]; dup {
					t.Errorf("%s delivered twice while in flight", sub)
				}
				// A later message of group-a only in the same batch as, and
				// after, every earlier one.
				if i := slices.Index(groupA, sub); i > 0 {
					for _, earlier := range groupA[:i] {
						if !inBatch[earlier] {
							t.Errorf("%s delivered while %s in flight (batches %v)", sub, earlier, batchSubs(batches))
						}
					}
				}
				inBatch[sub] = true
				got[sub] = d
			}
		}
		return got
	}
	got := checkOrder(batches)
	if _, ok := got["a1"]; !ok {
		t.Fatalf("a1 not delivered (batches %v)", batchSubs(batches))
	}
	if _, ok := got["b1"]; !ok {
		t.Fatalf("b1 not delivered while group-a was in flight (batches %v)", batchSubs(batches))
	}

	// Release a1: it, not a later message of its group, comes next.
	if _, ok := got["a2"]; !ok {
		if err := h.Queue.Release(context.Background(), q, got["a1"].Receipt); err != nil {
			t.Fatalf("Release(a1): %v", err)
		}
		ds := receive(t, h, q, 10)
		if len(ds) == 0 || ds[0].Message.SubmissionID != "a1" {
			t.Fatalf("after Release(a1): delivered %v, want a1 first", subs(ds))
		}
		got["a1"] = ds[0]
		for _, d := range ds[1:] {
			got[d.Message.SubmissionID] = d
		}
	}

	// Acknowledge in order; the rest of group-a follows in order.
	var order []string
	for _, sub := range []string{"a1", "a2", "a3", "b1"} {
		if d, ok := got[sub]; ok {
			order = append(order, sub)
			del(t, h, q, d)
		}
	}
	for range 4 {
		ds := receive(t, h, q, 10)
		for _, d := range ds {
			order = append(order, d.Message.SubmissionID)
			del(t, h, q, d)
		}
	}
	var aOrder []string
	for _, s := range order {
		if s[0] == 'a' {
			aOrder = append(aOrder, s)
		}
	}
	if !reflect.DeepEqual(aOrder, groupA) {
		t.Errorf("group-a processed as %v, want %v", aOrder, groupA)
	}
}

func batchSubs(batches [][]contracts.Delivery) [][]string {
	out := make([][]string, len(batches))
	for i, ds := range batches {
		out[i] = subs(ds)
	}
	return out
}

func testDeadLetter(t *testing.T, h Harness, q string) {
	poison, next := msg("group-a", "poison", 0), msg("group-a", "next", 0)
	send(t, h, q, poison)
	send(t, h, q, next)
	for i := 1; i <= h.MaxReceives; i++ {
		ds := receive(t, h, q, 1)
		if len(ds) != 1 || ds[0].Message != poison || ds[0].ReceiveCount != i {
			t.Fatalf("receive %d: got %+v, want poison with count %d", i, ds, i)
		}
		if err := h.Queue.Release(context.Background(), q, ds[0].Receipt); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	// The next receive moves poison to the DLQ and unblocks the group.
	var ds []contracts.Delivery
	for range 3 {
		if ds = receive(t, h, q, 10); len(ds) > 0 {
			break
		}
	}
	if len(ds) != 1 || ds[0].Message != next {
		t.Fatalf("after %d receives: delivered %v, want only next", h.MaxReceives, subs(ds))
	}
	del(t, h, q, ds[0])

	dl := receive(t, h, contracts.DLQ(q), 10)
	if len(dl) != 1 || dl[0].Message != poison {
		t.Fatalf("DLQ delivered %v, want poison", subs(dl))
	}
	if dl[0].ReceiveCount < 1 {
		t.Errorf("DLQ ReceiveCount = %d, want ≥ 1 (SQS keeps counting across the move; the embedded queue restarts)", dl[0].ReceiveCount)
	}
	del(t, h, contracts.DLQ(q), dl[0])
	if again := receive(t, h, q, 10); len(again) != 0 {
		t.Errorf("queue still delivers %v", subs(again))
	}
}

func testConcurrentReceivers(t *testing.T, h Harness, q string) {
	const messages, workers = 60, 8
	for i := range messages {
		// Half in their own group, half sharing a few groups.
		group := fmt.Sprint("g", i)
		if i%2 == 1 {
			group = fmt.Sprint("shared", i%3)
		}
		send(t, h, q, msg(group, fmt.Sprint("m", i), 0))
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]int{}
	)
	start := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				ds, err := h.Queue.Receive(context.Background(), q, 4, time.Hour)
				if err != nil {
					t.Errorf("Receive: %v", err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	// Without deletes at least every own group and the head of each shared
	// group is deliverable (an adapter may batch more of a shared group).
	if want := messages/2 + 3; len(seen) < want {
		t.Errorf("%d distinct messages delivered, want at least %d", len(seen), want)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s delivered %d times within one visibility window", id, n)
		}
	}
}
