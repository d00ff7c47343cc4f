package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// RunEvents checks an EventLog: append idempotent on (SubmissionID, Key),
// store-assigned Seq strictly increasing within a submission, and List with
// after and limit.
func RunEvents(t *testing.T, newStore func(t *testing.T) contracts.EventLog) {
	run(t, newStore, []subtest[contracts.EventLog]{
		{"AppendList", testEventsAppendList},
		{"Idempotent", testEventsIdempotent},
		{"AfterLimit", testEventsAfterLimit},
		{"KeyRequired", testEventsKeyRequired},
		{"Interleaved", testEventsInterleaved},
		{"Concurrent", testEventsConcurrent},
	})
}

func event(sub, key, typ string, step int) contracts.Event {
	return contracts.Event{SubmissionID: sub, Key: key, Type: typ, Step: step, At: base.Add(time.Duration(step) * time.Millisecond)}
}

func list(t *testing.T, s contracts.EventLog, sub string, after int64, limit int) []contracts.Event {
	t.Helper()
	got, err := s.ListEvents(context.Background(), sub, after, limit)
	if err != nil {
		t.Fatalf("ListEvents(%s, after %d, limit %d): %v", sub, after, limit, err)
	}
	return got
}

func checkIncreasing(t *testing.T, evs []contracts.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			t.Errorf("Seq not strictly increasing: %d then %d", evs[i-1].Seq, evs[i].Seq)
		}
	}
}

func testEventsAppendList(t *testing.T, s contracts.EventLog) {
	ctx := context.Background()
	sub := uniq(t)
	want := []contracts.Event{
		{SubmissionID: sub, Key: "k1", Type: contracts.EventTextDelta, Step: 0, Text: "hel", At: base},
		{SubmissionID: sub, Key: "k2", Type: contracts.EventToolStarted, Step: 1, Tool: "bash", CallID: "c1", At: base.Add(time.Nanosecond)},
		{SubmissionID: sub, Key: "k3", Type: contracts.EventApprovalNeeded, Step: 1, ApprovalID: "ap1", IsError: true, At: base.Add(time.Second)},
	}
	for _, e := range want {
		e.Seq = 999 // ignored: the store assigns Seq
		if err := s.AppendEvents(ctx, e); err != nil {
			t.Fatalf("AppendEvents(%s): %v", e.Key, err)
		}
	}
	got := list(t, s, sub, 0, 0)
	if len(got) != len(want) {
		t.Fatalf("ListEvents returned %d events, want %d: %+v", len(got), len(want), got)
	}
	checkIncreasing(t, got)
	for i, g := range got {
		w := want[i]
		if g.Seq <= 0 {
			t.Errorf("event %d: Seq = %d, want > 0", i, g.Seq)
		}
		if !g.At.Equal(w.At) {
			t.Errorf("event %d: At = %v, want %v", i, g.At, w.At)
		}
		g.Seq, g.At, w.At = 0, time.Time{}, time.Time{}
		if g != w {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func testEventsIdempotent(t *testing.T, s contracts.EventLog) {
	ctx := context.Background()
	sub := uniq(t)
	if err := s.AppendEvents(ctx, event(sub, "a", contracts.EventStep, 1)); err != nil {
		t.Fatalf("AppendEvents(a): %v", err)
	}
	if err := s.AppendEvents(ctx, event(sub, "b", contracts.EventStep, 2)); err != nil {
		t.Fatalf("AppendEvents(b): %v", err)
	}
	again := event(sub, "a", contracts.EventFailed, 9)
	if err := s.AppendEvents(ctx, again); err != nil {
		t.Fatalf("AppendEvents(a again): err = %v, want nil (no-op)", err)
	}
	got := list(t, s, sub, 0, 0)
	if len(got) != 2 || got[0].Key != "a" || got[0].Type != contracts.EventStep || got[1].Key != "b" {
		t.Errorf("after repeated append: %+v, want a(step), b", got)
	}
}

func testEventsAfterLimit(t *testing.T, s contracts.EventLog) {
	ctx := context.Background()
	sub := uniq(t)
	for i := range 5 {
		if err := s.AppendEvents(ctx, event(sub, fmt.Sprint("k", i), contracts.EventTextDelta, i)); err != nil {
			t.Fatalf("AppendEvent: %v", err)
		}
	}
	all := list(t, s, sub, 0, 0)
	if len(all) != 5 {
		t.Fatalf("ListEvents returned %d events, want 5", len(all))
	}
	after := list(t, s, sub, all[1].Seq, 0)
	if len(after) != 3 || after[0].Key != "k2" || after[2].Key != "k4" {
		t.Errorf("ListEvents(after k1) = %+v, want k2..k4", after)
	}
	page := list(t, s, sub, all[1].Seq, 2)
	if len(page) != 2 || page[0].Key != "k2" || page[1].Key != "k3" {
		t.Errorf("ListEvents(after k1, limit 2) = %+v, want k2, k3", page)
	}
	if tail := list(t, s, sub, all[4].Seq, 10); len(tail) != 0 {
		t.Errorf("ListEvents(after last) = %+v, want none", tail)
	}
	if none := list(t, s, sub+"-nobody", 0, 10); len(none) != 0 {
		t.Errorf("ListEvents(unknown submission) = %+v, want none", none)
	}
}

func testEventsKeyRequired(t *testing.T, s contracts.EventLog) {
	err := s.AppendEvents(context.Background(), event(uniq(t), "", contracts.EventStep, 0))
	if !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("AppendEvents(no key): err = %v, want ErrInvalid", err)
	}
}

func testEventsInterleaved(t *testing.T, s contracts.EventLog) {
	ctx := context.Background()
	p := uniq(t)
	a, b := p+"-a", p+"-b"
	for i := range 4 {
		for _, sub := range []string{a, b} {
			if err := s.AppendEvents(ctx, event(sub, fmt.Sprint("k", i), contracts.EventStep, i)); err != nil {
				t.Fatalf("AppendEvent: %v", err)
			}
		}
	}
	for _, sub := range []string{a, b} {
		got := list(t, s, sub, 0, 0)
		if len(got) != 4 {
			t.Errorf("ListEvents(%s) returned %d events, want 4", sub, len(got))
		}
		checkIncreasing(t, got)
		for i, e := range got {
			if e.SubmissionID != sub || e.Key != fmt.Sprint("k", i) {
				t.Errorf("ListEvents(%s)[%d] = %s/%s", sub, i, e.SubmissionID, e.Key)
			}
		}
	}
}

func testEventsConcurrent(t *testing.T, s contracts.EventLog) {
	ctx := context.Background()
	sub := uniq(t)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		for range 2 { // every event appended twice, concurrently
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.AppendEvents(ctx, event(sub, fmt.Sprint("k", i), contracts.EventTextDelta, i)); err != nil {
					t.Errorf("AppendEvent: %v", err)
				}
			}()
		}
	}
	wg.Wait()
	got := list(t, s, sub, 0, 0)
	if len(got) != n {
		t.Errorf("ListEvents returned %d events, want %d", len(got), n)
	}
	checkIncreasing(t, got)
	keys := map[string]bool{}
	for _, e := range got {
		if keys[e.Key] {
			t.Errorf("key %s listed twice", e.Key)
		}
		keys[e.Key] = true
	}
}
