package turn_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// A turn that tripped max_steps, retried with a higher limit, resumes at
// the failing step: the model is not called again for the steps it had
// done, and the mutating call of step 0 is not run again.
func TestRetryResumesFromTheFailingStep(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:multi", Limits: contracts.Limits{MaxSteps: 1}})
	sub := h.Submit(s.ID, "go")
	h.Drain()
	failed := h.Get(sub.ID)
	if failed.Phase != contracts.PhaseFailed || failed.Error != "limit_tripped:steps" || failed.FailedPhase != contracts.PhaseModel {
		t.Fatalf("first run: %s %q in %s", failed.Phase, failed.Error, failed.FailedPhase)
	}
	callsBefore := h.Model.Calls()

	// Retrying without raising the limit would trip it at once: refused.
	if _, err := h.RT.Engine.Retry(context.Background(), s.ID, sub.ID, nil); !errors.Is(err, contracts.ErrInvalid) || !strings.Contains(err.Error(), "max_steps") {
		t.Fatalf("retry without a raised limit: %v, want ErrInvalid naming max_steps", err)
	}
	ctx := contracts.WithPrincipal(context.Background(), contracts.Principal{Name: "bob"})
	got, err := h.RT.Engine.Retry(ctx, s.ID, sub.ID, &contracts.Limits{MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase.Terminal() || len(got.Retries) != 1 || got.Retries[0].By != "bob" || got.Retries[0].Error != "limit_tripped:steps" {
		t.Fatalf("retried record: %s retries %+v", got.Phase, got.Retries)
	}
	// A repeat while it runs again is the same retry.
	if again, err := h.RT.Engine.Retry(ctx, s.ID, sub.ID, nil); err != nil || len(again.Retries) != 1 {
		t.Fatalf("repeated retry: %v, %d retries", err, len(again.Retries))
	}
	h.Drain()
	done := h.Get(sub.ID)
	if done.Phase != contracts.PhaseCommitted || done.Result != "All four calls finished." {
		t.Fatalf("after retry: %s %q %q", done.Phase, done.Error, done.Result)
	}
	if calls := h.Model.Calls() - callsBefore; calls != 1 {
		t.Fatalf("the retry called the model %d times, want 1 (step 1 only)", calls)
	}
	if got := h.File(s.ID, "log.txt"); got != "ran\n" {
		t.Fatalf("log.txt = %q: the mutating call of step 0 ran again", got)
	}
	if tr := h.Transcript(s.ID); len(tr) != 4 {
		t.Fatalf("transcript %d nodes:\n%s", len(tr), strings.Join(tr, "\n"))
	}
	types := eventTypes(t, h, sub.ID)
	if i, j := slices.Index(types, contracts.EventFailed), slices.Index(types, contracts.EventRetried); i < 0 || j < i || types[len(types)-1] != contracts.EventCommitted {
		t.Fatalf("events %v: want failed, retried, …, committed", types)
	}
	// A committed turn is not retried.
	if _, err := h.RT.Engine.Retry(ctx, s.ID, sub.ID, nil); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("retrying a committed turn: %v, want ErrConflict", err)
	}
}

// A workflow node's turn is not retried: its run has its result.
func TestRetryRefusesAWorkflowNode(t *testing.T) {
	h := enginetest.New(t)
	ctx := context.Background()
	sess, err := h.Store.CreateSession(ctx, contracts.Session{ID: "ses_node", Owner: "test", Spec: contracts.SessionSpec{Model: "scripted:loop", Limits: contracts.Limits{MaxSteps: 1}},
		Workflow: &contracts.WorkflowRef{RunID: "run_x", NodeID: "n1"}, CreatedAt: enginetest.Start, UpdatedAt: enginetest.Start})
	if err != nil {
		t.Fatal(err)
	}
	sub := h.Submit(sess.ID, "go")
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseFailed {
		t.Fatalf("phase %s", got.Phase)
	}
	if _, err := h.RT.Engine.Retry(ctx, sess.ID, sub.ID, &contracts.Limits{MaxSteps: 5}); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("retrying a node's turn: %v, want ErrConflict", err)
	}
}

// A turn that failed in its tools phase (attempts exhausted) resumes there:
// the recorded results stand and the step's model call is not bought again.
func TestRetryResumesAFailedToolsPhase(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	s := h.Session(contracts.SessionSpec{Model: "scripted:multi"})
	sub := h.Submit(s.ID, "go")
	if _, err := h.RT.Workers.Once(context.Background(), contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	parked := h.Get(sub.ID)
	if parked.Phase != contracts.PhaseTools {
		t.Fatalf("phase %s", parked.Phase)
	}
	if err := h.RT.Engine.Fail(context.Background(), parked, "attempts_exhausted:TOOLS step 0"); err != nil {
		t.Fatal(err)
	}
	h.Lose(contracts.QueueTools)
	calls := h.Model.Calls()
	if _, err := h.RT.Engine.Retry(context.Background(), s.ID, sub.ID, nil); err != nil {
		t.Fatal(err)
	}
	h.Drain()
	done := h.Get(sub.ID)
	if done.Phase != contracts.PhaseCommitted || done.Retries[0].Phase != contracts.PhaseTools {
		t.Fatalf("after retry: %s %q, retries %+v", done.Phase, done.Error, done.Retries)
	}
	if n := h.Model.Calls() - calls; n != 1 {
		t.Fatalf("model called %d times after the retry, want 1 (the final step)", n)
	}
	if got := h.File(s.ID, "log.txt"); got != "ran\n" {
		t.Fatalf("log.txt = %q", got)
	}
}

// A turn forked from a middle node commits on its own branch: the head
// moves there and the old branch stays readable.
func TestForkFromAMiddleNode(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	first := h.Submit(s.ID, "one")
	h.Drain()
	second := h.Submit(s.ID, "two")
	h.Drain()
	oldHead := h.Get(second.ID).Leaf
	mid := h.Get(first.ID).Leaf // the first turn's answer
	fork, _, err := h.RT.Engine.AcceptWith(context.Background(), s.ID, "three", "", acceptFrom(mid))
	if err != nil {
		t.Fatal(err)
	}
	h.Drain()
	if got := h.Get(fork.ID); got.Phase != contracts.PhaseCommitted || got.Parent != mid {
		t.Fatalf("fork: %s parent %q", got.Phase, got.Parent)
	}
	tr := h.Transcript(s.ID)
	want := []string{"user: text=one", "assistant: text=Hello from cairn's scripted model. You said: one",
		"user: text=three", "assistant: text=Hello from cairn's scripted model. You said: three"}
	if !slices.Equal(tr, want) {
		t.Fatalf("head path:\n%s\nwant\n%s", strings.Join(tr, "\n"), strings.Join(want, "\n"))
	}
	old, err := h.Store.Path(context.Background(), oldHead)
	if err != nil || len(old) != 4 || !strings.Contains(enginetest.Render(old)[2], "two") {
		t.Fatalf("old branch: %v %v", enginetest.Render(old), err)
	}

	// Forks from a node of another session, an unknown node or a node
	// asking for tools are refused.
	other := h.Accept("scripted:demo")
	h.Drain()
	otherPath, _ := h.Store.Path(context.Background(), h.Get(other.ID).Leaf)
	for name, parent := range map[string]string{"other session": mid, "unknown": "nod_nope", "asks for tools": otherPath[1].ID} {
		sid := other.SessionID
		if name == "other session" {
			sid = other.SessionID
		}
		if _, _, err := h.RT.Engine.AcceptWith(context.Background(), sid, "x", "", acceptFrom(parent)); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestTreeHoldsEveryBranch(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	first := h.Submit(s.ID, "one")
	h.Drain()
	h.Submit(s.ID, "two")
	h.Drain()
	if _, _, err := h.RT.Engine.AcceptWith(context.Background(), s.ID, "three", "", acceptFrom(h.Get(first.ID).Leaf)); err != nil {
		t.Fatal(err)
	}
	h.Drain()
	tree, err := h.RT.Engine.Tree(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range tree {
		got = append(got, string(n.Role)+":"+strings.TrimPrefix(n.Blocks[0].Text, "Hello from cairn's scripted model. You said: "))
	}
	want := []string{"user:one", "assistant:one", "user:two", "assistant:two", "user:three", "assistant:three"}
	if !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
}
