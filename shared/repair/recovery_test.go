package repair_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/repair/recovery"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

// crashed marks sub as left by a worker that died holding the lease.
func crashed(h *enginetest.Harness, id string, mod func(*contracts.Submission)) contracts.Submission {
	return h.Set(id, func(s *contracts.Submission) {
		s.LeaseOwner, s.LeaseUntil, s.Attempt = "crashed-worker", h.Clock.Now().Add(-time.Second), 1
		if mod != nil {
			mod(s)
		}
	})
}

// A model stream that completed before the crash is recorded from the
// stream store on resume: the model is not called again.
func TestRepairStreamCompleteNotRecorded(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	ctx := context.Background()
	sub := h.Accept("scripted:plain")
	h.Lose(contracts.QueueModel)
	key := ids.StreamKey(sub.ID, 0, 1)
	const answer = "the answer bought before the crash"
	if err := h.Store.PutChunks(ctx, key, 0, contracts.ModelEvent{Type: contracts.ModelText, Text: answer}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.Complete(ctx, key, contracts.ModelResponse{Text: answer, StopReason: "end_turn"}); err != nil {
		t.Fatal(err)
	}
	crashed(h, sub.ID, func(s *contracts.Submission) { s.StreamKey = key })
	calls := h.Model.Calls()

	rep := h.Repair()
	if rep.Redriven != 1 || rep.States[recovery.StateStreamCompleteNotRecorded] != 1 {
		t.Fatalf("report %+v, want one stream_complete_not_recorded re-drive", rep)
	}
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseCommitted || got.Result != answer {
		t.Fatalf("after resume: %s %q (%s), want COMMITTED with the stored answer", got.Phase, got.Result, got.Error)
	}
	if n := h.Model.Calls(); n != calls {
		t.Fatalf("model called %d times on resume, want 0", n-calls)
	}
	want := []string{"user: text=hello", "assistant: text=" + answer}
	if tr := h.Transcript(sub.SessionID); !slices.Equal(tr, want) {
		t.Fatalf("transcript %q, want %q", tr, want)
	}
}

// Some results present, some not: only the missing read-only calls re-run;
// a mutating call that started and left no result is reported interrupted,
// and a finished call keeps its result.
func TestRepairToolsPartlyDone(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	ctx := context.Background()
	s := h.Session(contracts.SessionSpec{Model: "scripted:multi"})
	sub := h.Submit(s.ID, "several things")
	if _, err := h.RT.Workers.Once(ctx, contracts.QueueModel, 10); err != nil {
		t.Fatal(err)
	}
	h.Lose(contracts.QueueTools)
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseTools || len(got.ToolRequests) != 4 {
		t.Fatalf("not in TOOLS with 4 calls: %s %+v", got.Phase, got.ToolRequests)
	}
	byName := map[string]string{}
	for _, c := range got.ToolRequests {
		byName[c.Name] = c.ID
	}
	write, glob, bash, grep := byName["write_file"], byName["glob"], byName["bash"], byName["grep"]
	// The crashed run: write_file finished, glob and bash started, grep untouched.
	const kept = "wrote a.txt before the crash"
	for _, id := range []string{write, glob, bash} {
		if err := h.Store.MarkToolStarted(ctx, sub.ID, 0, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Store.PutToolResult(ctx, sub.ID, 0, contracts.ToolResult{CallID: write, Content: kept}); err != nil {
		t.Fatal(err)
	}
	cur := crashed(h, sub.ID, nil)

	ev, err := recovery.Gather(ctx, h.Store, h.Store, h.Store, h.RT.Engine.Registry, s, cur, h.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := recovery.ClassifySubmission(cur, ev)
	if c.State != recovery.StateMutatingInterrupted || !slices.Equal(c.Rerun, []string{glob, grep}) || !slices.Equal(c.Interrupted, []string{bash}) {
		t.Fatalf("classified %+v, want mutating_interrupted rerun [glob grep] interrupted [bash]", c)
	}
	rep := h.Repair()
	if rep.Redriven != 1 || rep.States[recovery.StateMutatingInterrupted] != 1 {
		t.Fatalf("report %+v, want one mutating_interrupted re-drive", rep)
	}
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("after resume: %s (%s)", got.Phase, got.Error)
	}

	evs, err := h.Store.ListEvents(ctx, sub.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, e := range evs {
		if e.Type == contracts.EventToolStarted {
			ran = append(ran, e.CallID)
		}
	}
	if !slices.Equal(ran, []string{glob, grep}) {
		t.Fatalf("calls run on resume %q, want only glob %s and grep %s", ran, glob, grep)
	}
	if f := h.File(s.ID, "log.txt"); f != "" {
		t.Fatalf("interrupted bash re-ran: log.txt %q", f)
	}
	if f := h.File(s.ID, "a.txt"); f != "" {
		t.Fatalf("finished write_file re-ran: a.txt %q", f)
	}
	tr := h.Transcript(s.ID)
	if len(tr) != 4 || !strings.HasPrefix(tr[2], "tool: result="+kept+" result=") ||
		!strings.Contains(tr[2], " result="+turn.Interrupted+"(error) ") {
		t.Fatalf("tool node %q: want the kept write_file result and bash interrupted", tr)
	}
}

// A submission queued behind a running turn of its session is left to that
// turn's commit; a free session's waiting submission is started.
func TestRepairWaitingBehindAnother(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	first := h.Submit(s.ID, "first")
	second := h.Submit(s.ID, "second")
	h.Lose(contracts.QueueModel)
	h.Clock.Advance(2 * stuckAfter)

	rep := h.Repair()
	states := map[recovery.State]int{recovery.StateModelNotStarted: 1, recovery.StateWaitingBehindAnother: 1}
	if rep.Started != 0 || rep.Redriven != 1 || !maps.Equal(rep.States, states) {
		t.Fatalf("report %+v, want first re-driven and second waiting", rep)
	}
	if got := h.Get(second.ID); got.Phase != contracts.PhaseAccepted {
		t.Fatalf("second is %s, want ACCEPTED", got.Phase)
	}
	h.Drain()
	for _, id := range []string{first.ID, second.ID} {
		if got := h.Get(id); got.Phase != contracts.PhaseCommitted {
			t.Fatalf("%s: %s (%s)", id, got.Phase, got.Error)
		}
	}
}
