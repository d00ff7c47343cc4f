package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

func TestScenariosCommit(t *testing.T) {
	cases := []struct {
		model      string
		steps      int
		wantResult string
		check      func(t *testing.T, h *enginetest.Harness, sid string)
	}{
		{"scripted:plain", 1, "Hello from cairn's scripted model. You said: hi there", nil},
		{"scripted:demo", 4, "Done: I wrote notes.txt", func(t *testing.T, h *enginetest.Harness, sid string) {
			if got := h.File(sid, "notes.txt"); got != "cairn was here\nsecond line\n" {
				t.Errorf("notes.txt = %q", got)
			}
		}},
		{"scripted:multi", 2, "All four calls finished.", func(t *testing.T, h *enginetest.Harness, sid string) {
			if got := h.File(sid, "log.txt"); got != "ran\n" {
				t.Errorf("log.txt = %q, want one line", got)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			h := enginetest.New(t)
			s := h.Session(contracts.SessionSpec{Model: c.model})
			sub := h.Submit(s.ID, "hi there")
			h.Drain()
			got := h.Get(sub.ID)
			if got.Phase != contracts.PhaseCommitted {
				t.Fatalf("phase = %s (%s), want COMMITTED", got.Phase, got.Error)
			}
			if got.Step+1 != c.steps || int(h.Model.Calls()) != c.steps {
				t.Fatalf("steps = %d, model calls = %d, want %d", got.Step+1, h.Model.Calls(), c.steps)
			}
			if !strings.HasPrefix(got.Result, c.wantResult) {
				t.Fatalf("result = %q", got.Result)
			}
			if tr := h.Transcript(s.ID); len(tr) != 2*c.steps {
				t.Fatalf("transcript has %d nodes, want %d:\n%s", len(tr), 2*c.steps, strings.Join(tr, "\n"))
			}
			evs, _ := h.Store.ListEvents(context.Background(), sub.ID, 0, 1000)
			if len(evs) == 0 || evs[len(evs)-1].Type != contracts.EventCommitted {
				t.Fatalf("last event is not committed: %+v", evs)
			}
			if c.check != nil {
				c.check(t, h, s.ID)
			}
		})
	}
}

// Every message delivered twice: the same transcript, one model call per
// step, each mutating tool run once.
func TestDuplicateDelivery(t *testing.T) {
	ref := enginetest.New(t)
	rs := ref.Session(contracts.SessionSpec{Model: "scripted:multi"})
	ref.Submit(rs.ID, "go")
	ref.Drain()

	h := enginetest.New(t, func(p *assemble.Ports) { p.Queue = twice{p.Queue} })
	s := h.Session(contracts.SessionSpec{Model: "scripted:multi"})
	sub := h.Submit(s.ID, "go")
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase = %s (%s)", got.Phase, got.Error)
	}
	if h.Model.Calls() != 2 {
		t.Fatalf("model calls = %d, want 2 (once per step)", h.Model.Calls())
	}
	if got := h.File(s.ID, "log.txt"); got != "ran\n" {
		t.Fatalf("mutating tool ran more than once: log.txt = %q", got)
	}
	if a, b := ref.Transcript(rs.ID), h.Transcript(s.ID); !slices.Equal(a, b) {
		t.Fatalf("transcripts differ:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// twice sends every message a second time under another deduplication id.
type twice struct{ contracts.Queue }

func (q twice) Send(ctx context.Context, name string, m contracts.Message) error {
	if err := q.Queue.Send(ctx, name, m); err != nil {
		return err
	}
	m.Nonce += "dup"
	return q.Queue.Send(ctx, name, m)
}

func TestApprovalParksDurablyThenResumes(t *testing.T) {
	for _, d := range []contracts.Decision{contracts.Allow, contracts.Deny} {
		t.Run(string(d), func(t *testing.T) {
			h := enginetest.New(t)
			s := h.Session(contracts.SessionSpec{Model: "scripted:approval", Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}}})
			sub := h.Submit(s.ID, "go")
			h.Drain()
			parked := h.Get(sub.ID)
			if parked.Phase != contracts.PhaseTools || len(parked.Approvals) != 1 || parked.Approvals[0].Decision != "" {
				t.Fatalf("not parked: %+v", parked)
			}
			pending, err := h.RT.Engine.Pending(context.Background(), s.ID)
			if err != nil || len(pending) != 1 {
				t.Fatalf("pending = %v, %v", pending, err)
			}
			if h.File(s.ID, "approved.txt") != "" {
				t.Fatal("tool ran before approval")
			}
			if _, err := h.RT.Engine.Decide(context.Background(), s.ID, pending[0].ID, d, "test"); err != nil {
				t.Fatal(err)
			}
			// deciding again the same way is a no-op; the other way is a conflict
			if _, err := h.RT.Engine.Decide(context.Background(), s.ID, pending[0].ID, d, ""); err != nil {
				t.Fatalf("repeat decision: %v", err)
			}
			h.Drain()
			done := h.Get(sub.ID)
			if done.Phase != contracts.PhaseCommitted {
				t.Fatalf("phase = %s (%s)", done.Phase, done.Error)
			}
			ran := h.File(s.ID, "approved.txt") == "approved\n"
			if ran != (d == contracts.Allow) {
				t.Fatalf("decision %s: tool ran = %v", d, ran)
			}
			tr := h.Transcript(s.ID)
			if d == contracts.Deny && !strings.Contains(tr[2], "denied") {
				t.Fatalf("deny not reported to the model: %s", tr[2])
			}
		})
	}
}

func TestApprovalTimesOutToDeny(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:approval", Policy: contracts.Policy{Default: contracts.Ask, ApprovalTimeoutSeconds: 60}})
	sub := h.Submit(s.ID, "go")
	h.Drain()
	if _, err := h.RT.Repair.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Drain()
	if h.Get(sub.ID).Phase != contracts.PhaseTools {
		t.Fatal("approval expired early")
	}
	h.Clock.Advance(61 * time.Second)
	if rep, err := h.RT.Repair.Run(context.Background()); err != nil || rep.Expired != 1 {
		t.Fatalf("repair = %+v, %v", rep, err)
	}
	h.Drain()
	done := h.Get(sub.ID)
	if done.Phase != contracts.PhaseCommitted || h.File(s.ID, "approved.txt") != "" {
		t.Fatalf("phase = %s, file = %q", done.Phase, h.File(s.ID, "approved.txt"))
	}
	if tr := h.Transcript(s.ID); !strings.Contains(tr[2], "approval timed out") {
		t.Fatalf("timeout not reported: %s", tr[2])
	}
}

func TestLimitsTrip(t *testing.T) {
	cases := []struct {
		name   string
		spec   contracts.SessionSpec
		before func(h *enginetest.Harness)
		want   string
	}{
		{"steps", contracts.SessionSpec{Model: "scripted:loop", Limits: contracts.Limits{MaxSteps: 3}}, nil, "limit_tripped:steps"},
		{"tokens", contracts.SessionSpec{Model: "scripted:plain", Limits: contracts.Limits{MaxTokens: 5}}, nil, "limit_tripped:tokens"},
		{"wall_time", contracts.SessionSpec{Model: "scripted:plain", Limits: contracts.Limits{MaxWallSeconds: 10}}, func(h *enginetest.Harness) { h.Clock.Advance(11 * time.Second) }, "limit_tripped:wall_time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := enginetest.New(t)
			s := h.Session(c.spec)
			sub := h.Submit(s.ID, "go")
			if c.before != nil {
				c.before(h)
			}
			h.Drain()
			got := h.Get(sub.ID)
			if got.Phase != contracts.PhaseFailed || got.Error != c.want {
				t.Fatalf("phase = %s error = %q, want FAILED %s", got.Phase, got.Error, c.want)
			}
			sess, _ := h.Store.GetSession(context.Background(), s.ID)
			if sess.Active != "" {
				t.Fatalf("session still held by %s", sess.Active)
			}
		})
	}
}

// Submissions of one session run one at a time, in order, each continuing
// from the previous head.
func TestSubmissionsQueuePerSession(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	a := h.Submit(s.ID, "first")
	b := h.Submit(s.ID, "second")
	if h.Get(b.ID).Phase != contracts.PhaseAccepted {
		t.Fatal("second submission started while the first runs")
	}
	h.Drain()
	if h.Get(a.ID).Phase != contracts.PhaseCommitted || h.Get(b.ID).Phase != contracts.PhaseCommitted {
		t.Fatalf("phases %s %s", h.Get(a.ID).Phase, h.Get(b.ID).Phase)
	}
	tr := h.Transcript(s.ID)
	want := []string{"user: text=first", "assistant: text=Hello from cairn's scripted model. You said: first",
		"user: text=second", "assistant: text=Hello from cairn's scripted model. You said: second"}
	if !slices.Equal(tr, want) {
		t.Fatalf("transcript:\n%s", strings.Join(tr, "\n"))
	}
}

func TestIdempotencyKey(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	a, created, err := h.RT.Engine.Accept(context.Background(), s.ID, "hi", "k1")
	if err != nil || !created {
		t.Fatal(created, err)
	}
	b, created, err := h.RT.Engine.Accept(context.Background(), s.ID, "hi again", "k1")
	if err != nil || created || b.ID != a.ID {
		t.Fatalf("second accept: created=%v id=%s err=%v", created, b.ID, err)
	}
}

// A mutating call with a started marker and no result is never re-run.
func TestInterruptedMutatingCallIsNotRerun(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	s := h.Session(contracts.SessionSpec{Model: "scripted:approval"})
	sub := h.Submit(s.ID, "go")
	ctx := context.Background()
	// run only the model phase
	if _, err := h.RT.Workers.Once(ctx, contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	cur := h.Get(sub.ID)
	if cur.Phase != contracts.PhaseTools {
		t.Fatalf("phase %s", cur.Phase)
	}
	if err := h.Store.MarkToolStarted(ctx, cur.ID, cur.Step, cur.ToolRequests[0].ID); err != nil {
		t.Fatal(err)
	}
	h.Drain()
	if h.File(s.ID, "approved.txt") != "" {
		t.Fatal("interrupted mutating call was re-run")
	}
	if tr := h.Transcript(s.ID); !strings.Contains(tr[2], "interrupted") {
		t.Fatalf("not reported as interrupted: %s", tr[2])
	}
}

// A mutating call that started, ran to the end in its sandbox and died
// before its result was journaled gets the sandbox's recorded outcome on
// resume (the ledger), not "interrupted", and does not run again.
func TestStartedCallTheSandboxFinishedKeepsItsResult(t *testing.T) {
	h := enginetest.New(t)
	h.RT.Workers.Chain = nil // steps the turn through the queues phase by phase
	s := h.Session(contracts.SessionSpec{Model: "scripted:approval"})
	sub := h.Submit(s.ID, "go")
	ctx := context.Background()
	if _, err := h.RT.Workers.Once(ctx, contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	cur := h.Get(sub.ID)
	call := cur.ToolRequests[0]
	if err := h.Store.MarkToolStarted(ctx, cur.ID, cur.Step, call.ID); err != nil {
		t.Fatal(err)
	}
	// What the dead process's bash tool had sent, under the call's effect id.
	sb, err := h.RT.Engine.Sandboxes.Acquire(ctx, s.ID, s.Spec.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	var in struct{ Command string }
	if err := json.Unmarshal(call.Input, &in); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Exec(ctx, contracts.ExecRequest{Command: in.Command, CallID: ids.Effect(cur.ID, cur.Step, call.ID)}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Exec(ctx, contracts.ExecRequest{Command: in.Command + "; echo the real output", CallID: ids.Effect(cur.ID, cur.Step, call.ID)}); !errors.Is(err, contracts.ErrConflict) {
		t.Fatal("the ledger accepted a different request under the same effect id")
	}
	h.Drain()
	if got := h.File(s.ID, "approved.txt"); got != "approved\n" {
		t.Fatalf("approved.txt = %q: the call ran again or not at all", got)
	}
	if tr := h.Transcript(s.ID); strings.Contains(tr[2], "interrupted") || h.Get(sub.ID).Phase != contracts.PhaseCommitted {
		t.Fatalf("the recorded outcome was not used: %s", tr[2])
	}
}

// A stream completed before a crash is reused: no second model call.
func TestCompletedStreamIsNotBoughtTwice(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	sub := h.Submit(s.ID, "go")
	ctx := context.Background()
	cur := h.Get(sub.ID)
	resp, err := h.Model.Stream(ctx, contracts.ModelRequest{Model: "plain", Messages: []contracts.Node{{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "go"}}}}}, func(contracts.ModelEvent) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// simulate: a previous attempt set its stream key and completed the stream, then died
	key := "st_prior"
	if _, err := h.Store.Complete(ctx, key, resp); err != nil {
		t.Fatal(err)
	}
	next := cur
	next.StreamKey = key
	if _, err := h.Store.UpdateSubmission(ctx, next, cur.Version); err != nil {
		t.Fatal(err)
	}
	h.Drain()
	if h.Get(sub.ID).Phase != contracts.PhaseCommitted || h.Model.Calls() != 1 {
		t.Fatalf("phase %s, model calls %d (want 1: the prior one only)", h.Get(sub.ID).Phase, h.Model.Calls())
	}
}

func TestAcceptRejectsBadInput(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	cases := []struct {
		session, prompt string
		want            error
	}{
		{s.ID, "", contracts.ErrInvalid},
		{s.ID, strings.Repeat("x", turn.MaxPromptBytes+1), contracts.ErrTooLarge},
		{s.ID, "bad \xff utf8", contracts.ErrInvalid},
		{"ses_nope", "hi", contracts.ErrNotFound},
	}
	for _, c := range cases {
		if _, _, err := h.RT.Engine.Accept(context.Background(), c.session, c.prompt, ""); !errors.Is(err, c.want) {
			t.Errorf("Accept(%q…) = %v, want %v", short(c.prompt), err, c.want)
		}
	}
	subs, _ := h.Store.ListSubmissions(context.Background(), s.ID, "", 0)
	if len(subs) != 0 {
		t.Fatalf("bad input stored %d submissions", len(subs))
	}
}

func short(s string) string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

var _ = json.Marshal
