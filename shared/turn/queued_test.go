package turn_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// waitingLooks counts the journal's looks for a session's waiting
// submissions (ListSubmissions of ACCEPTED).
type waitingLooks struct {
	contracts.JournalStore
	n atomic.Int64
}

func (w *waitingLooks) ListSubmissions(ctx context.Context, sessionID string, phase contracts.Phase, limit int) ([]contracts.Submission, error) {
	if phase == contracts.PhaseAccepted {
		w.n.Add(1)
	}
	return w.JournalStore.ListSubmissions(ctx, sessionID, phase, limit)
}

func withLooks(t *testing.T) (*enginetest.Harness, *waitingLooks) {
	looks := &waitingLooks{}
	h := enginetest.NewConfig(t, assemble.Config{}, func(p *assemble.Ports) {
		looks.JournalStore = p.Journal
		p.Journal = looks
	})
	return h, looks
}

// A turn accepted into an idle session starts at once and its end starts
// no search for a next one (on DynamoDB each look is an index Query); a
// turn accepted while another runs marks the session Queued, so the end
// of the running one looks, finds it, and the last end clears the mark.
func TestOnlyAQueuedSessionLooksForItsNextTurn(t *testing.T) {
	h, looks := withLooks(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	a := h.Submit(s.ID, "alone")
	h.Drain()
	if h.Get(a.ID).Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s", h.Get(a.ID).Phase)
	}
	if n := looks.n.Load(); n != 0 {
		t.Fatalf("%d looks for a waiting turn in a session that never had one", n)
	}
	b := h.Submit(s.ID, "first")
	c := h.Submit(s.ID, "second") // b runs: c waits
	d := h.Submit(s.ID, "third")
	sess, err := h.Store.GetSession(context.Background(), s.ID)
	if err != nil || !sess.Queued || sess.Active != b.ID {
		t.Fatalf("session %+v, %v; want b active and queued", sess, err)
	}
	h.Drain()
	for _, sub := range []contracts.Submission{b, c, d} {
		if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
			t.Fatalf("%s: %s", sub.ID, got.Phase)
		}
	}
	sess, err = h.Store.GetSession(context.Background(), s.ID)
	if err != nil || sess.Queued || sess.Active != "" {
		t.Fatalf("session %+v, %v; want idle, not queued", sess, err)
	}
	if n := looks.n.Load(); n != 3 { // b's end found c, c's end found d, d's end found none
		t.Fatalf("%d looks, want 3", n)
	}
	want := []string{"user: text=alone", "assistant: text=Hello from cairn's scripted model. You said: alone",
		"user: text=first", "assistant: text=Hello from cairn's scripted model. You said: first",
		"user: text=second", "assistant: text=Hello from cairn's scripted model. You said: second",
		"user: text=third", "assistant: text=Hello from cairn's scripted model. You said: third"}
	if got := h.Transcript(s.ID); len(got) != len(want) {
		t.Fatalf("transcript %q", got)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("transcript %q", got)
			}
		}
	}
}

// A submission whose accept died before starting it (the record written,
// the session not claimed) is not lost though no Queued mark names it:
// repair's StartNext always looks, and marks the session Queued when
// another turn runs meanwhile, so it runs after that one.
func TestASubmissionLeftWaitingByACrashedAcceptRuns(t *testing.T) {
	h, _ := withLooks(t)
	ctx := context.Background()
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	lost, _, err := h.Store.CreateSubmission(ctx, contracts.Submission{
		ID: "sub_lost", SessionID: s.ID, Prompt: "lost", Owner: s.Owner, Phase: contracts.PhaseAccepted,
		CreatedAt: enginetest.Start, UpdatedAt: enginetest.Start,
	})
	if err != nil {
		t.Fatal(err)
	}
	b := h.Submit(s.ID, "later") // the idle, unqueued session starts it at once
	if got := h.Get(b.ID); got.Phase == contracts.PhaseAccepted {
		t.Fatalf("later submission waits: %s", got.Phase)
	}
	h.Clock.Advance(10 * time.Minute)
	h.Repair() // finds the stuck ACCEPTED one while b runs (or after it ended)
	h.Drain()
	h.Clock.Advance(10 * time.Minute)
	h.Repair()
	h.Drain()
	for _, id := range []string{lost.ID, b.ID} {
		if got := h.Get(id); got.Phase != contracts.PhaseCommitted {
			t.Fatalf("%s: %s %s", id, got.Phase, got.Error)
		}
	}
}

// hookJournal runs after, once, right after the first session write that
// claims the session for a submission (Active set).
type hookJournal struct {
	contracts.JournalStore
	armed atomic.Bool
	after func()
}

func (j *hookJournal) UpdateSession(ctx context.Context, s contracts.Session, v int64) (contracts.Session, error) {
	out, err := j.JournalStore.UpdateSession(ctx, s, v)
	if err == nil && s.Active != "" && j.armed.CompareAndSwap(true, false) {
		j.after()
	}
	return out, err
}

// Two accepts into one idle session, the second landing between the
// first's claim of the session and its begin (the AWS shape: no batch,
// each write visible alone). The second sees Active = the first, still
// ACCEPTED, and begins it for it: it must mark the session Queued first,
// or its own submission waits unseen and a third accepted after the first
// ended runs before it.
func TestAnAcceptWhileAnotherIsClaimedIsNotOvertaken(t *testing.T) {
	j := &hookJournal{}
	h := enginetest.NewConfig(t, assemble.Config{}, func(p *assemble.Ports) {
		j.JournalStore = p.Journal
		p.Journal = j
		p.Batch = nil // as on AWS
	})
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	var second contracts.Submission
	j.after = func() { second = h.Submit(s.ID, "second") }
	j.armed.Store(true)
	first := h.Submit(s.ID, "first")
	h.Drain()
	if got := h.Get(first.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("first: %s", got.Phase)
	}
	sess, _ := h.Store.GetSession(context.Background(), s.ID)
	t.Logf("after the first ended: second %s, session active=%q queued=%v", h.Get(second.ID).Phase, sess.Active, sess.Queued)
	third := h.Submit(s.ID, "third")
	h.Drain()
	t.Logf("after the third: second %s, third %s", h.Get(second.ID).Phase, h.Get(third.ID).Phase)
	if h.Get(second.ID).Phase != contracts.PhaseCommitted || h.Get(third.ID).Phase != contracts.PhaseCommitted {
		t.Fatalf("second %s, third %s; want both committed, second first; transcript %q", h.Get(second.ID).Phase, h.Get(third.ID).Phase, h.Transcript(s.ID))
	}
}

// failOnce fails the first PutNode (a transient store error).
type failOnce struct {
	contracts.TranscriptStore
	armed atomic.Bool
}

func (f *failOnce) PutNode(ctx context.Context, n contracts.Node) error {
	if f.armed.CompareAndSwap(true, false) {
		return context.DeadlineExceeded
	}
	return f.TranscriptStore.PutNode(ctx, n)
}

// The embedded shape (batches): an accept whose begin hits a transient
// error leaves the session claimed by its ACCEPTED submission (for repair).
// The next accept begins that one — and marks the session Queued, so its
// own runs next, not after a later accept's.
func TestAnAcceptAfterAFailedBeginIsNotOvertaken(t *testing.T) {
	f := &failOnce{}
	h := enginetest.New(t, func(p *assemble.Ports) {
		f.TranscriptStore = p.Transcript
		p.Transcript = f
	})
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	f.armed.Store(true)
	first := h.Submit(s.ID, "first") // claimed, begin failed: waits for repair or the next accept
	second := h.Submit(s.ID, "second")
	h.Drain()
	third := h.Submit(s.ID, "third")
	h.Drain()
	t.Logf("first %s, second %s, third %s", h.Get(first.ID).Phase, h.Get(second.ID).Phase, h.Get(third.ID).Phase)
	if h.Get(first.ID).Phase != contracts.PhaseCommitted || h.Get(second.ID).Phase != contracts.PhaseCommitted || h.Get(third.ID).Phase != contracts.PhaseCommitted {
		t.Fatalf("first %s, second %s, third %s: want all committed in order", h.Get(first.ID).Phase, h.Get(second.ID).Phase, h.Get(third.ID).Phase)
	}
}
