package dynamo

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

func TestSparseUnfinishedIndex(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	ctx := awstest.Context(t)
	p := uniq(t)
	var subs []contracts.Submission
	for i, ph := range []contracts.Phase{contracts.PhaseAccepted, contracts.PhaseModel, contracts.PhaseTools} {
		sub, _, err := s.CreateSubmission(ctx, newSub(fmt.Sprintf("%s-%d", p, i), p+"-sess", ph, t0.Add(time.Duration(i)*time.Second)))
		if err != nil {
			t.Fatalf("CreateSubmission: %v", err)
		}
		subs = append(subs, sub)
	}
	inIndex := func(sub contracts.Submission) bool {
		return getS(raw(t, e, sessionPK(sub.SessionID), recordSK(sub.ID)), attrGSIPK) != ""
	}
	for _, sub := range subs {
		if !inIndex(sub) {
			t.Errorf("non-terminal %s carries no GSI key", sub.ID)
		}
	}
	for i, ph := range []contracts.Phase{contracts.PhaseCommitted, contracts.PhaseFailed} {
		subs[i].Phase = ph
		if _, err := s.UpdateSubmission(ctx, subs[i], subs[i].Version); err != nil {
			t.Fatalf("UpdateSubmission(%s → %s): %v", subs[i].ID, ph, err)
		}
		if inIndex(subs[i]) {
			t.Errorf("terminal %s still carries the GSI key", subs[i].ID)
		}
	}
	list, err := s.ListUnfinished(ctx, 0)
	if err != nil {
		t.Fatalf("ListUnfinished: %v", err)
	}
	var mine []string
	for _, sub := range list {
		if strings.HasPrefix(sub.ID, p) {
			mine = append(mine, sub.ID)
		}
	}
	if want := []string{subs[2].ID}; !reflect.DeepEqual(mine, want) {
		t.Errorf("ListUnfinished = %v, want %v", mine, want)
	}
}

func TestPagination(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	s.pageSize = 2 // every Query returns at most 2 items per page
	ctx := awstest.Context(t)
	p := uniq(t)
	const n = 7
	var wantIDs []string
	for i := range n {
		id := fmt.Sprintf("%s-%02d", p, i)
		wantIDs = append(wantIDs, id)
		if _, _, err := s.CreateSubmission(ctx, newSub(id, p+"-sess", contracts.PhaseAccepted, t0.Add(time.Duration(i)))); err != nil {
			t.Fatalf("CreateSubmission: %v", err)
		}
		if _, err := s.CreateSession(ctx, contracts.Session{ID: id, CreatedAt: t0}); err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		if err := s.MarkToolStarted(ctx, p, 1, fmt.Sprint("call-", i)); err != nil {
			t.Fatalf("MarkToolStarted: %v", err)
		}
		if err := s.AppendEvents(ctx, contracts.Event{SubmissionID: p, Key: fmt.Sprint("k", i), Type: contracts.EventStep, At: t0}); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
	}
	chunks := make([]contracts.ModelEvent, n)
	for i := range chunks {
		chunks[i] = contracts.ModelEvent{Type: contracts.ModelText, Text: fmt.Sprint(i)}
	}
	if err := s.PutChunks(ctx, p, 0, chunks...); err != nil {
		t.Fatalf("PutChunks: %v", err)
	}

	ids := func(subs []contracts.Submission) []string {
		var out []string
		for _, x := range subs {
			if strings.HasPrefix(x.ID, p) {
				out = append(out, x.ID)
			}
		}
		return out
	}
	check := func(what string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	all, err := s.ListSubmissions(ctx, p+"-sess", "", 0)
	check("ListSubmissions(all)", ids(all), wantIDs, err)
	acc, err := s.ListSubmissions(ctx, p+"-sess", contracts.PhaseAccepted, 5)
	check("ListSubmissions(ACCEPTED, 5)", ids(acc), wantIDs[:5], err)
	unf, err := s.ListUnfinished(ctx, 0)
	check("ListUnfinished", ids(unf), wantIDs, err)
	recs, err := s.ToolRecords(ctx, p, 1)
	check("len(ToolRecords)", len(recs), n, err)
	evs, err := s.ListEvents(ctx, p, 0, 0)
	check("len(ListEvents)", len(evs), n, err)
	evs, err = s.ListEvents(ctx, p, 2, 3)
	var keys []string
	for _, ev := range evs {
		keys = append(keys, ev.Key)
	}
	check("ListEvents(after 2, limit 3)", keys, []string{"k2", "k3", "k4"}, err)
	st, err := s.GetStream(ctx, p)
	check("GetStream chunks", st.Chunks, chunks, err)
	sess, err := s.ListSessions(ctx, "", 0)
	var sessIDs []string
	for _, x := range sess {
		if strings.HasPrefix(x.ID, p) {
			sessIDs = append(sessIDs, x.ID)
		}
	}
	var newestFirst []string
	for i := n - 1; i >= 0; i-- {
		newestFirst = append(newestFirst, wantIDs[i])
	}
	check("ListSessions", sessIDs, newestFirst, err)
	three, err := s.ListSessions(ctx, "", 3)
	check("len(ListSessions(3))", len(three), 3, err)
}

// An owner's sessions among many of others' are found past DynamoDB's
// pre-filter Limit, page after page, up to the limit asked.
func TestListSessionsOfAnOwnerPagesPastTheFilter(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	s.pageSize = 2 // two items read per page, before the filter
	ctx := awstest.Context(t)
	p := uniq(t)
	var mine []string
	for i := range 30 {
		owner := p + "-other"
		if i%6 == 5 {
			owner = p + "-me"
		}
		id := fmt.Sprintf("%s-%02d", p, i)
		if _, err := s.CreateSession(ctx, contracts.Session{ID: id, Owner: owner, CreatedAt: t0}); err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		if owner == p+"-me" {
			mine = append([]string{id}, mine...) // newest first
		}
	}
	got, err := s.ListSessions(ctx, p+"-me", 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range got {
		if x.Owner != p+"-me" {
			t.Fatalf("ListSessions(%s-me) holds %s of %s", p, x.ID, x.Owner)
		}
		ids = append(ids, x.ID)
	}
	if !reflect.DeepEqual(ids, mine) {
		t.Fatalf("ListSessions(owner) = %v, want %v", ids, mine)
	}
	three, err := s.ListSessions(ctx, p+"-me", 3)
	if err != nil || len(three) != 3 || three[0].ID != mine[0] {
		t.Fatalf("ListSessions(owner, 3) = %d sessions (%v), want 3 from %s", len(three), err, mine[0])
	}
}

// An unfinished record's repair-index key is its id: a write of the record
// rewrites its index entry in place (one index write) instead of moving it
// (a delete and a put), and ListUnfinished and ListUnfinishedRuns still
// return the oldest update first, whatever the ids' order.
func TestUnfinishedIndexKeyDoesNotMove(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	ctx := awstest.Context(t)
	p := uniq(t)
	old := time.Date(1990, 1, 2, 3, 4, 5, 0, time.UTC) // older than any other test's records
	w := s.Workflows()
	t.Cleanup(func() { // out of the index, so that another run of this test (-count) finds only its own
		for _, id := range []string{p + "-a", p + "-b"} {
			if sub, err := s.GetSubmission(ctx, id); err == nil {
				sub.Phase = contracts.PhaseCommitted
				s.UpdateSubmission(ctx, sub, sub.Version)
			}
		}
		for _, id := range []string{p + "-ra", p + "-rb"} {
			if r, err := w.GetRun(ctx, id); err == nil {
				r.Status = contracts.RunSucceeded
				w.UpdateRun(ctx, r, r.Version)
			}
		}
	})
	// a has the smaller id and, after its update, the later time
	a, _, err := s.CreateSubmission(ctx, newSub(p+"-a", p+"-sess", contracts.PhaseModel, old))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.CreateSubmission(ctx, newSub(p+"-b", p+"-sess", contracts.PhaseModel, old.Add(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	indexKey := func() (string, string, string) {
		it := raw(t, e, sessionPK(a.SessionID), recordSK(a.ID))
		return getS(it, attrGSIPK), getS(it, attrGSISK), getS(it, attrUpdated)
	}
	pk0, sk0, up0 := indexKey()
	a.Phase, a.UpdatedAt = contracts.PhaseTools, old.Add(2*time.Second)
	if a, err = s.UpdateSubmission(ctx, a, a.Version); err != nil {
		t.Fatal(err)
	}
	pk1, sk1, up1 := indexKey()
	if pk0 == "" || pk1 != pk0 || sk1 != sk0 || sk1 != a.ID {
		t.Errorf("index key (%q, %q) → (%q, %q); want the id, unmoved", pk0, sk0, pk1, sk1)
	}
	if up1 == up0 || up1 != sortTime(a.UpdatedAt) {
		t.Errorf("updated %q → %q, want %q", up0, up1, sortTime(a.UpdatedAt))
	}
	got, err := s.ListUnfinished(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != b.ID || got[1].ID != a.ID {
		t.Errorf("ListUnfinished(2) = %+v, want [%s %s] (oldest update first)", got, b.ID, a.ID)
	}

	ra, _, err := w.CreateRun(ctx, contracts.WorkflowRun{ID: p + "-ra", WorkflowID: p + "-wf", Status: contracts.RunRunning, StartedAt: old, UpdatedAt: old})
	if err != nil {
		t.Fatal(err)
	}
	rb, _, err := w.CreateRun(ctx, contracts.WorkflowRun{ID: p + "-rb", WorkflowID: p + "-wf", Status: contracts.RunRunning, StartedAt: old, UpdatedAt: old.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	before := raw(t, e, runPK(ra.ID), skRun)
	ra.UpdatedAt = old.Add(2 * time.Second)
	if ra, err = w.UpdateRun(ctx, ra, ra.Version); err != nil {
		t.Fatal(err)
	}
	after := raw(t, e, runPK(ra.ID), skRun)
	if getS(after, attrGSISK) != ra.ID || getS(before, attrGSISK) != ra.ID || getS(after, attrUpdated) != sortTime(ra.UpdatedAt) {
		t.Errorf("run index key %q → %q, updated %q; want the id, unmoved, and %q", getS(before, attrGSISK), getS(after, attrGSISK), getS(after, attrUpdated), sortTime(ra.UpdatedAt))
	}
	runs, err := w.ListUnfinishedRuns(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != rb.ID || runs[1].ID != ra.ID {
		t.Errorf("ListUnfinishedRuns(2) = %+v, want [%s %s]", runs, rb.ID, ra.ID)
	}
}
