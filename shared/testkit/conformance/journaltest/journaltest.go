package journaltest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Run checks store against the JournalStore contract. newStore is called
// once per subtest; it may return a fresh store or a shared one.
func Run(t *testing.T, newStore func(t *testing.T) contracts.JournalStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s contracts.JournalStore)
	}{
		{"SessionCreateGet", testSessionCreateGet},
		{"SessionCreateExisting", testSessionCreateExisting},
		{"SessionGetMissing", testSessionGetMissing},
		{"SessionUpdate", testSessionUpdate},
		{"SessionList", testSessionList},
		{"SessionListByOwner", testSessionListByOwner},
		{"SubmissionCreateGet", testSubmissionCreateGet},
		{"SubmissionIdempotencyKey", testSubmissionIdempotencyKey},
		{"SubmissionSameID", testSubmissionSameID},
		{"SubmissionGetMissing", testSubmissionGetMissing},
		{"SubmissionUpdate", testSubmissionUpdate},
		{"ListSubmissionsOrder", testListSubmissionsOrder},
		{"ListUnfinished", testListUnfinished},
		{"ToolRecords", testToolRecords},
		{"RacingUpdates", testRacingUpdates},
		{"RacingCreates", testRacingCreates},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

func testSessionCreateGet(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	want := newSession(uniq(t))
	want.Version = 42 // ignored: a created record starts at version 1
	got, err := s.CreateSession(ctx, want)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	want.Version = 1
	equalSession(t, "CreateSession returned", got, want)
	read, err := s.GetSession(ctx, want.ID)
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	equalSession(t, "GetSession", read, want)
	if !read.CreatedAt.Equal(want.CreatedAt) || !read.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("timestamps changed: got %v/%v want %v/%v", read.CreatedAt, read.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
}

func testSessionCreateExisting(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	first := newSession(uniq(t))
	if _, err := s.CreateSession(ctx, first); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	second := first
	second.Owner = "someone-else"
	if _, err := s.CreateSession(ctx, second); !errors.Is(err, contracts.ErrExists) {
		t.Fatalf("second CreateSession: err = %v, want ErrExists", err)
	}
	got, err := s.GetSession(ctx, first.ID)
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	first.Version = 1
	equalSession(t, "after duplicate create", got, first)
}

func testSessionGetMissing(t *testing.T, s contracts.JournalStore) {
	if _, err := s.GetSession(context.Background(), uniq(t)); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetSession(missing): err = %v, want ErrNotFound", err)
	}
}

func testSessionUpdate(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	created, err := s.CreateSession(ctx, newSession(uniq(t)))
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}

	win := created
	win.Head = "node-1"
	win.Active = "sub-1"
	win.UpdatedAt = at(10)
	got, err := s.UpdateSession(ctx, win, 1)
	if err != nil {
		t.Fatalf("UpdateSession(expected 1): %v", err)
	}
	win.Version = 2
	equalSession(t, "UpdateSession returned", got, win)

	lose := created
	lose.Head = "stale"
	if _, err := s.UpdateSession(ctx, lose, 1); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("stale UpdateSession: err = %v, want ErrConflict", err)
	}
	read, err := s.GetSession(ctx, created.ID)
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	equalSession(t, "after stale update", read, win)

	missing := newSession(uniq(t) + "-missing")
	if _, err := s.UpdateSession(ctx, missing, 1); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("UpdateSession(missing): err = %v, want ErrNotFound", err)
	}
}

func testSessionList(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	var want []string
	for _, suffix := range []string{"a", "b", "c"} {
		sess, err := s.CreateSession(ctx, newSession(p+"-"+suffix))
		if err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		want = append(want, sess.ID)
	}
	all, err := s.ListSessions(ctx, "", 100000)
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	var got []string
	for _, sess := range all {
		if strings.HasPrefix(sess.ID, p) {
			got = append(got, sess.ID)
		}
	}
	slices.Sort(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListSessions: got %v, want %v", got, want)
	}
	two, err := s.ListSessions(ctx, "", 2)
	if err != nil {
		t.Fatalf("ListSessions(2): %v", err)
	}
	if len(two) != 2 {
		t.Errorf("ListSessions(2) returned %d sessions, want 2", len(two))
	}
}

// A list of one owner's sessions holds all of them, newest first, and
// never another owner's; its limit counts matching sessions. One session
// has a body big enough for a claim check (the owner must still be found).
func testSessionListByOwner(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	a, b := p+"-owner-a", p+"-owner-b"
	var wantA, wantB []string
	for i := range 12 {
		sess := newSession(fmt.Sprintf("%s-%02d", p, i))
		sess.Owner = b
		if i%3 == 1 {
			sess.Owner = a
		}
		if i == 4 {
			sess.Spec.System = strings.Repeat("s", 150<<10)
		}
		if _, err := s.CreateSession(ctx, sess); err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		if sess.Owner == a {
			wantA = append([]string{sess.ID}, wantA...)
		} else {
			wantB = append([]string{sess.ID}, wantB...)
		}
	}
	ids := func(list []contracts.Session, owner string) []string {
		t.Helper()
		var out []string
		for _, x := range list {
			if owner != "" && x.Owner != owner {
				t.Fatalf("ListSessions(%q) holds %s of %q", owner, x.ID, x.Owner)
			}
			if strings.HasPrefix(x.ID, p) {
				out = append(out, x.ID)
			}
		}
		return out
	}
	for _, c := range []struct {
		owner string
		want  []string
	}{{a, wantA}, {b, wantB}} {
		all, err := s.ListSessions(ctx, c.owner, 0)
		if err != nil {
			t.Fatalf("ListSessions(%s): %v", c.owner, err)
		}
		if got := ids(all, c.owner); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ListSessions(%s) = %v, want %v", c.owner, got, c.want)
		}
		two, err := s.ListSessions(ctx, c.owner, 2)
		if err != nil {
			t.Fatalf("ListSessions(%s, 2): %v", c.owner, err)
		}
		if got := ids(two, c.owner); !reflect.DeepEqual(got, c.want[:2]) {
			t.Errorf("ListSessions(%s, 2) = %v, want %v", c.owner, got, c.want[:2])
		}
	}
	none, err := s.ListSessions(ctx, p+"-nobody", 5)
	if err != nil || len(none) != 0 {
		t.Errorf("ListSessions(an owner of nothing) = %d sessions, %v; want none", len(none), err)
	}
	everyone, err := s.ListSessions(ctx, "", 0)
	if err != nil {
		t.Fatalf("ListSessions(all): %v", err)
	}
	if got := ids(everyone, ""); len(got) != len(wantA)+len(wantB) {
		t.Errorf("ListSessions(\"\") holds %d of the %d sessions", len(got), len(wantA)+len(wantB))
	}
}

func testSubmissionCreateGet(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	want := newSubmission(p+"-sub", p+"-sess", "key-1", at(5))
	want.Version = 9 // ignored
	want.Step = 2
	want.Attempt = 1
	want.LeaseOwner = "worker-1"
	want.LeaseUntil = at(30)
	want.StartedAt = at(3)
	want.StreamKey = "stream-1"
	want.ToolRequests = []contracts.ToolCall{{ID: "call-1", Name: "bash", Input: []byte(`{"cmd":"ls"}`)}}
	want.Approvals = []contracts.Approval{{ID: "ap-1", CallID: "call-1", Tool: "bash", Step: 2, ExpiresAt: at(60)}}
	want.Decided = []contracts.Approval{{ID: "ap-0", CallID: "call-0", Tool: "bash", Input: []byte(`{"cmd":"rm x"}`), Step: 1,
		Decision: contracts.Deny, Reason: "no", DecidedBy: "alice", DecidedAt: at(20), ExpiresAt: at(40)}}
	want.Leaf = "node-3"
	want.Usage = contracts.Usage{InputTokens: 10, OutputTokens: 20}

	got, created, err := s.CreateSubmission(ctx, want)
	if err != nil {
		t.Fatalf("CreateSubmission: %v", err)
	}
	if !created {
		t.Errorf("CreateSubmission: created = false, want true")
	}
	want.Version = 1
	equalSubmission(t, "CreateSubmission returned", got, want)
	read, err := s.GetSubmission(ctx, want.ID)
	if err != nil {
		t.Fatalf("GetSubmission: %v", err)
	}
	equalSubmission(t, "GetSubmission", read, want)
	if !read.UpdatedAt.Equal(want.UpdatedAt) || !read.LeaseUntil.Equal(want.LeaseUntil) {
		t.Errorf("timestamps changed: got %v/%v", read.UpdatedAt, read.LeaseUntil)
	}
}

func testSubmissionIdempotencyKey(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	first, created, err := s.CreateSubmission(ctx, newSubmission(p+"-1", p+"-sess", "key", at(1)))
	if err != nil || !created {
		t.Fatalf("first CreateSubmission: created=%v err=%v", created, err)
	}
	dup := newSubmission(p+"-2", p+"-sess", "key", at(2))
	dup.Prompt = "different prompt"
	got, created, err := s.CreateSubmission(ctx, dup)
	if err != nil {
		t.Fatalf("duplicate CreateSubmission: %v", err)
	}
	if created {
		t.Errorf("duplicate CreateSubmission: created = true, want false")
	}
	equalSubmission(t, "duplicate CreateSubmission returned", got, first)
	if _, err := s.GetSubmission(ctx, dup.ID); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("GetSubmission(duplicate id): err = %v, want ErrNotFound", err)
	}

	// The key is scoped to its session.
	other, created, err := s.CreateSubmission(ctx, newSubmission(p+"-3", p+"-other", "key", at(3)))
	if err != nil || !created || other.ID != p+"-3" {
		t.Errorf("same key, other session: id=%s created=%v err=%v, want a new submission", other.ID, created, err)
	}
	// An empty key never deduplicates.
	for _, id := range []string{p + "-4", p + "-5"} {
		if _, created, err := s.CreateSubmission(ctx, newSubmission(id, p+"-sess", "", at(4))); err != nil || !created {
			t.Errorf("CreateSubmission(%s, no key): created=%v err=%v, want created", id, created, err)
		}
	}
}

func testSubmissionSameID(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	first, _, err := s.CreateSubmission(ctx, newSubmission(p+"-1", p+"-sess", "", at(1)))
	if err != nil {
		t.Fatalf("CreateSubmission: %v", err)
	}
	again := newSubmission(p+"-1", p+"-sess", "", at(2))
	again.Prompt = "changed"
	got, created, err := s.CreateSubmission(ctx, again)
	if err != nil {
		t.Fatalf("CreateSubmission(same id): %v", err)
	}
	if created {
		t.Errorf("CreateSubmission(same id): created = true, want false")
	}
	equalSubmission(t, "CreateSubmission(same id) returned", got, first)
}

func testSubmissionGetMissing(t *testing.T, s contracts.JournalStore) {
	if _, err := s.GetSubmission(context.Background(), uniq(t)); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetSubmission(missing): err = %v, want ErrNotFound", err)
	}
}

func testSubmissionUpdate(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	created, _, err := s.CreateSubmission(ctx, newSubmission(p, p+"-sess", "k", at(1)))
	if err != nil {
		t.Fatalf("CreateSubmission: %v", err)
	}

	v2 := created
	v2.Phase = contracts.PhaseModel
	v2.LeaseOwner, v2.LeaseUntil, v2.Attempt = "w1", at(40), 1
	v2.UpdatedAt = at(2)
	got, err := s.UpdateSubmission(ctx, v2, 1)
	if err != nil {
		t.Fatalf("UpdateSubmission(expected 1): %v", err)
	}
	v2.Version = 2
	equalSubmission(t, "UpdateSubmission returned", got, v2)

	v3 := got
	v3.Phase, v3.Step = contracts.PhaseTools, 1
	got, err = s.UpdateSubmission(ctx, v3, 2)
	if err != nil {
		t.Fatalf("UpdateSubmission(expected 2): %v", err)
	}
	if got.Version != 3 {
		t.Errorf("version after second update = %d, want 3", got.Version)
	}
	v3.Version = 3

	for _, stale := range []int64{1, 2, 4} {
		lose := created
		lose.Phase = contracts.PhaseFailed
		lose.Error = "stale writer"
		if _, err := s.UpdateSubmission(ctx, lose, stale); !errors.Is(err, contracts.ErrConflict) {
			t.Errorf("UpdateSubmission(expected %d, stored 3): err = %v, want ErrConflict", stale, err)
		}
	}
	read, err := s.GetSubmission(ctx, p)
	if err != nil {
		t.Fatalf("GetSubmission: %v", err)
	}
	equalSubmission(t, "after stale updates", read, v3)

	missing := newSubmission(p+"-missing", p+"-sess", "", at(1))
	if _, err := s.UpdateSubmission(ctx, missing, 1); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("UpdateSubmission(missing): err = %v, want ErrNotFound", err)
	}
}

func testListSubmissionsOrder(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	sess := p + "-sess"
	for _, id := range []string{"03", "01", "02"} {
		if _, _, err := s.CreateSubmission(ctx, newSubmission(p+"-"+id, sess, "", at(0))); err != nil {
			t.Fatalf("CreateSubmission: %v", err)
		}
	}
	if _, _, err := s.CreateSubmission(ctx, newSubmission(p+"-00", p+"-other", "", at(0))); err != nil {
		t.Fatalf("CreateSubmission(other session): %v", err)
	}
	got, err := s.ListSubmissions(ctx, sess, "", 0)
	if err != nil {
		t.Fatalf("ListSubmissions: %v", err)
	}
	want := []string{p + "-01", p + "-02", p + "-03"}
	if g := ids(got, func(string) bool { return true }); !reflect.DeepEqual(g, want) {
		t.Errorf("ListSubmissions = %v, want %v", g, want)
	}
	none, err := s.ListSubmissions(ctx, p+"-nobody", "", 0)
	if err != nil || len(none) != 0 {
		t.Errorf("ListSubmissions(unknown session) = %v, %v; want empty", none, err)
	}
	if len(got) != 3 {
		return
	}
	// phase filter and limit: move 01 on, then ask for the first ACCEPTED one
	first := got[0]
	next := first
	next.Phase = contracts.PhaseModel
	if _, err := s.UpdateSubmission(ctx, next, first.Version); err != nil {
		t.Fatalf("UpdateSubmission: %v", err)
	}
	acc, err := s.ListSubmissions(ctx, sess, contracts.PhaseAccepted, 1)
	if err != nil || len(acc) != 1 || acc[0].ID != p+"-02" {
		t.Errorf("ListSubmissions(ACCEPTED, 1) = %v, %v; want [%s-02]", ids(acc, func(string) bool { return true }), err, p)
	}
	model, err := s.ListSubmissions(ctx, sess, contracts.PhaseModel, 0)
	if err != nil || len(model) != 1 || model[0].ID != p+"-01" {
		t.Errorf("ListSubmissions(MODEL) = %v, %v; want [%s-01]", ids(model, func(string) bool { return true }), err, p)
	}
}

func testListUnfinished(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	mine := func(id string) bool { return strings.HasPrefix(id, p) }
	create := func(id string, sec int, phase contracts.Phase) contracts.Submission {
		sub := newSubmission(p+"-"+id, p+"-sess", "", at(sec))
		sub.Phase = phase
		got, _, err := s.CreateSubmission(ctx, sub)
		if err != nil {
			t.Fatalf("CreateSubmission: %v", err)
		}
		return got
	}
	create("a", 30, contracts.PhaseModel)
	b := create("b", 10, contracts.PhaseAccepted)
	create("c", 20, contracts.PhaseTools)
	create("done", 5, contracts.PhaseCommitted)
	create("cancelled", 6, contracts.PhaseCancelled)
	d := create("d", 1, contracts.PhaseCommit)

	list := func() []string {
		t.Helper()
		got, err := s.ListUnfinished(ctx, 100000)
		if err != nil {
			t.Fatalf("ListUnfinished: %v", err)
		}
		for _, sub := range got {
			if sub.Phase.Terminal() {
				t.Errorf("ListUnfinished returned terminal submission %s (%s)", sub.ID, sub.Phase)
			}
		}
		return ids(got, mine)
	}
	if got, want := list(), []string{p + "-d", p + "-b", p + "-c", p + "-a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListUnfinished = %v, want %v", got, want)
	}

	// Finishing one removes it; touching another moves it to the back.
	d.Phase, d.UpdatedAt = contracts.PhaseFailed, at(40)
	if _, err := s.UpdateSubmission(ctx, d, d.Version); err != nil {
		t.Fatalf("UpdateSubmission(d → FAILED): %v", err)
	}
	b.Phase, b.UpdatedAt = contracts.PhaseModel, at(50)
	if _, err := s.UpdateSubmission(ctx, b, b.Version); err != nil {
		t.Fatalf("UpdateSubmission(b): %v", err)
	}
	if got, want := list(), []string{p + "-c", p + "-a", p + "-b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListUnfinished after updates = %v, want %v", got, want)
	}

	limited, err := s.ListUnfinished(ctx, 1)
	if err != nil {
		t.Fatalf("ListUnfinished(1): %v", err)
	}
	if len(limited) != 1 {
		t.Errorf("ListUnfinished(1) returned %d submissions, want 1", len(limited))
	}
}

func testToolRecords(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	sub := uniq(t)
	for range 2 {
		if err := s.MarkToolStarted(ctx, sub, 1, "call-a"); err != nil {
			t.Fatalf("MarkToolStarted(call-a): %v", err)
		}
	}
	if err := s.MarkToolStarted(ctx, sub, 1, "call-b"); err != nil {
		t.Fatalf("MarkToolStarted(call-b): %v", err)
	}
	first := contracts.ToolResult{CallID: "call-a", Content: "first"}
	second := contracts.ToolResult{CallID: "call-a", Content: "second", IsError: true}
	for _, r := range []contracts.ToolResult{first, second} {
		if err := s.PutToolResult(ctx, sub, 1, r); err != nil {
			t.Fatalf("PutToolResult(%s): %v", r.Content, err)
		}
	}
	// A result without a started marker (a read-only call) is kept as is.
	noMarker := contracts.ToolResult{CallID: "call-c", Content: "ro", IsError: true}
	if err := s.PutToolResult(ctx, sub, 1, noMarker); err != nil {
		t.Fatalf("PutToolResult(call-c): %v", err)
	}
	// Marking started after the result changes neither.
	if err := s.MarkToolStarted(ctx, sub, 1, "call-a"); err != nil {
		t.Fatalf("MarkToolStarted(call-a) again: %v", err)
	}
	if err := s.MarkToolStarted(ctx, sub, 2, "call-a"); err != nil {
		t.Fatalf("MarkToolStarted(step 2): %v", err)
	}

	got, err := s.ToolRecords(ctx, sub, 1)
	if err != nil {
		t.Fatalf("ToolRecords: %v", err)
	}
	want := map[string]contracts.ToolRecord{
		"call-a": {SubmissionID: sub, Step: 1, CallID: "call-a", Started: true, Result: &first},
		"call-b": {SubmissionID: sub, Step: 1, CallID: "call-b", Started: true},
		"call-c": {SubmissionID: sub, Step: 1, CallID: "call-c", Result: &noMarker},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ToolRecords(step 1):\n got %+v\nwant %+v", got, want)
	}
	step2, err := s.ToolRecords(ctx, sub, 2)
	if err != nil {
		t.Fatalf("ToolRecords(step 2): %v", err)
	}
	if len(step2) != 1 || !step2["call-a"].Started || step2["call-a"].Result != nil {
		t.Errorf("ToolRecords(step 2) = %+v, want only call-a started", step2)
	}
	empty, err := s.ToolRecords(ctx, sub, 3)
	if err != nil || len(empty) != 0 {
		t.Errorf("ToolRecords(step 3) = %v, %v; want empty", empty, err)
	}
}

func testRacingUpdates(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	created, _, err := s.CreateSubmission(ctx, newSubmission(p, p+"-sess", "", at(0)))
	if err != nil {
		t.Fatalf("CreateSubmission: %v", err)
	}
	const n = 16
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub := created
			sub.LeaseOwner = "worker-" + string(rune('a'+i))
			sub.Phase = contracts.PhaseModel
			<-start
			_, err := s.UpdateSubmission(ctx, sub, created.Version)
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, sub.LeaseOwner)
				mu.Unlock()
			case !errors.Is(err, contracts.ErrConflict):
				t.Errorf("racing UpdateSubmission: err = %v, want nil or ErrConflict", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d racing writers won (%v), want exactly 1", len(winners), winners)
	}
	got, err := s.GetSubmission(ctx, p)
	if err != nil {
		t.Fatalf("GetSubmission: %v", err)
	}
	if got.Version != created.Version+1 || got.LeaseOwner != winners[0] {
		t.Errorf("stored version %d owner %q, want version %d owner %q", got.Version, got.LeaseOwner, created.Version+1, winners[0])
	}
}

func testRacingCreates(t *testing.T, s contracts.JournalStore) {
	ctx := context.Background()
	p := uniq(t)
	const n = 16
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		seen    = map[string]bool{}
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub := newSubmission(p+"-"+string(rune('a'+i)), p+"-sess", "same-key", at(0))
			<-start
			got, c, err := s.CreateSubmission(ctx, sub)
			if err != nil {
				t.Errorf("racing CreateSubmission: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			seen[got.ID] = true
			if c {
				created++
			}
		}()
	}
	close(start)
	wg.Wait()
	if created != 1 || len(seen) != 1 {
		t.Errorf("racing creates with one key: %d created, ids returned %v; want 1 created and one id", created, seen)
	}
}
