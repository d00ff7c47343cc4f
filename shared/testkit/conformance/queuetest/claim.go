package queuetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// claimTests check contracts.Claimer, for the queues that implement it.
var claimTests = []struct {
	name string
	fn   func(t *testing.T, h Harness, q string, c contracts.Claimer)
}{
	{"ClaimedIsInFlight", testClaimedIsInFlight},
	{"ClaimKeepsGroupOrder", testClaimKeepsGroupOrder},
	{"ClaimDedups", testClaimDedups},
}

func claim(t *testing.T, h Harness, c contracts.Claimer, q string, m contracts.Message) (contracts.Delivery, bool) {
	t.Helper()
	d, ok, err := c.SendClaimed(context.Background(), q, m, h.visibility())
	if err != nil {
		t.Fatalf("SendClaimed(%s): %v", m.DedupID(), err)
	}
	return d, ok
}

// testClaimedIsInFlight: a claimed message is received once already — no
// one else gets it within its visibility, its receipt deletes it, and if
// its claimer dies it comes back like any received message.
func testClaimedIsInFlight(t *testing.T, h Harness, q string, c contracts.Claimer) {
	m := msg("s1", "sub-1", 0)
	d, ok := claim(t, h, c, q, m)
	if !ok {
		t.Fatal("SendClaimed on an empty group did not claim")
	}
	if !reflect.DeepEqual(d.Message, m) || d.ID == "" || d.Receipt == "" || d.ReceiveCount != 1 {
		t.Fatalf("claimed delivery %+v, want the message, ids set, count 1", d)
	}
	if ds := receive(t, h, q, 10); len(ds) != 0 {
		t.Fatalf("Receive while claimed = %v, want none", subs(ds))
	}
	h.Advance(h.visibility() + time.Second) // the claimer died
	again := receive(t, h, q, 10)
	if len(again) != 1 || again[0].ID != d.ID || again[0].ReceiveCount != 2 {
		t.Fatalf("after the claim's visibility: delivered %+v, want %s with count 2", again, d.ID)
	}
	del(t, h, q, again[0])

	d2, ok := claim(t, h, c, q, msg("s1", "sub-2", 0))
	if !ok {
		t.Fatal("second claim on an empty group did not claim")
	}
	del(t, h, q, d2)
	h.Advance(h.visibility() + time.Second)
	if ds := receive(t, h, q, 10); len(ds) != 0 {
		t.Fatalf("Receive after deleting the claimed message = %v, want none", subs(ds))
	}
}

// testClaimKeepsGroupOrder: with an earlier message of its group on the
// queue, a claim is a plain send, delivered after it; other groups do not
// matter.
func testClaimKeepsGroupOrder(t *testing.T, h Harness, q string, c contracts.Claimer) {
	send(t, h, q, msg("s1", "sub-1", 0))
	if _, ok := claim(t, h, c, q, msg("s1", "sub-2", 0)); ok {
		t.Fatal("claimed a message behind an earlier one of its group")
	}
	if _, ok := claim(t, h, c, q, msg("s2", "sub-3", 0)); !ok {
		t.Fatal("a message of another group was not claimed")
	}
	var got []string
	for range 3 {
		for _, d := range receive(t, h, q, 10) {
			got = append(got, d.Message.SubmissionID)
			del(t, h, q, d)
		}
	}
	if !reflect.DeepEqual(got, []string{"sub-1", "sub-2"}) {
		t.Fatalf("delivered %v, want [sub-1 sub-2] in order (sub-3 is claimed)", got)
	}
}

// testClaimDedups: a claim is deduplicated like a send.
func testClaimDedups(t *testing.T, h Harness, q string, c contracts.Claimer) {
	m := msg("s1", "sub-1", 0)
	send(t, h, q, m)
	ds := receive(t, h, q, 10)
	if len(ds) != 1 {
		t.Fatalf("Receive returned %d messages, want 1", len(ds))
	}
	del(t, h, q, ds[0])
	if d, ok := claim(t, h, c, q, m); ok || d.Receipt != "" {
		t.Fatalf("a duplicate within the window was claimed: %+v", d)
	}
	h.Advance(h.visibility() + time.Second)
	if ds := receive(t, h, q, 10); len(ds) != 0 {
		t.Fatalf("a duplicate claim was stored: %v", subs(ds))
	}
}
