package crashpoint_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/crashpoint"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// ops runs a plain turn under plan and returns the ops of the counted writes.
func ops(t *testing.T, plan *crashpoint.Plan) (*enginetest.Harness, contracts.Submission, bool) {
	t.Helper()
	h := enginetest.New(t, func(p *assemble.Ports) { *p = crashpoint.Wrap(*p, plan) })
	plan.Pause()
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	plan.Resume()
	var sub contracts.Submission
	crashed := crashpoint.Recover(func() { sub = h.Submit(s.ID, "hi") })
	return h, sub, crashed
}

func TestCountsWritesOnly(t *testing.T) {
	plan := &crashpoint.Plan{}
	h, sub, crashed := ops(t, plan)
	if crashed {
		t.Fatal("a counting plan crashed")
	}
	h.Drain()
	if got := h.Get(sub.ID).Phase; got != contracts.PhaseCommitted {
		t.Fatalf("phase %s", got)
	}
	var names []string
	for i, p := range plan.Points() {
		if p.N != i+1 {
			t.Fatalf("point %d numbered %d", i, p.N)
		}
		names = append(names, p.Op)
	}
	// Accept: the submission, the session claim, the user node, the advance
	// and the model wake-up; then the worker's handlers.
	if want := []string{"CreateSubmission", "UpdateSession", "PutNode", "UpdateSubmission", "Send"}; !slices.Equal(names[:5], want) {
		t.Errorf("first writes %v, want %v", names[:5], want)
	}
	// (no PutChunks: a completed stream's only non-text chunk, its usage,
	// is in its completion)
	for _, op := range []string{"Complete", "AppendEvents", "Delete"} {
		if !slices.Contains(names, op) {
			t.Errorf("no %s among %v", op, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "Get") || strings.HasPrefix(n, "List") || n == "Receive" || n == "Path" {
			t.Errorf("read %s counted", n)
		}
	}
	if _, ok := plan.Fired(); ok || plan.Count() != len(names) {
		t.Errorf("fired or miscounted: %d vs %d", plan.Count(), len(names))
	}
}

func TestCrashBeforeAndAfter(t *testing.T) {
	for _, before := range []bool{true, false} {
		// Write 1 is Accept's CreateSubmission.
		plan := &crashpoint.Plan{K: 1, Before: before}
		h, _, crashed := ops(t, plan)
		if !crashed {
			t.Fatalf("before=%v: no crash", before)
		}
		pt, ok := plan.Fired()
		if !ok || pt.Op != "CreateSubmission" || pt.N != 1 || pt.Before != before || pt.Key == "" {
			t.Fatalf("before=%v: fired %+v %v", before, pt, ok)
		}
		subs, err := h.Store.ListUnfinished(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		// Accept writes its submission inside a batch (with its start): a
		// crash after the write but before the batch's commit loses it too.
		if !pt.InBatch {
			t.Errorf("before=%v: Accept's CreateSubmission is not in a batch", before)
		}
		if stored := len(subs) == 1; stored != (!before && !pt.InBatch) {
			t.Errorf("before=%v: submission stored = %v", before, stored)
		}
		// Only one crash per plan: the rest of the turn runs.
		if crashpoint.Recover(func() { h.Drain() }) {
			t.Errorf("before=%v: crashed twice", before)
		}
	}
}

// TestCheckFlagsViolations makes sure the crash test's checker would see
// each broken invariant.
func TestCheckFlagsViolations(t *testing.T) {
	sc := scenarios[2] // multi
	ref := outcome{phase: contracts.PhaseCommitted, calls: 2, transcript: []string{"user: text=x", "assistant: text=a", "tool: result=ok", "assistant: text=b"},
		files: map[string]string{"log.txt": "ran\n"}}
	if probs, _ := check(sc, ref, ref); len(probs) != 0 {
		t.Fatalf("reference flagged: %v", probs)
	}
	cases := map[string]func(*outcome){
		"phase":  func(o *outcome) { o.phase = contracts.PhaseFailed },
		"calls":  func(o *outcome) { o.calls = 3 },
		"stream": func(o *outcome) { o.crashed, o.fired = true, crashpoint.Point{Op: "PutChunks"} }, // wants 3 calls
		"twice":  func(o *outcome) { o.files = map[string]string{"log.txt": "ran\nran\n"} },
		"lost":   func(o *outcome) { o.files = map[string]string{"log.txt": ""} },
		"transcript": func(o *outcome) {
			o.transcript = []string{"user: text=x", "assistant: text=a", "tool: result=other", "assistant: text=b"}
		},
		"model": func(o *outcome) {
			o.transcript = []string{"user: text=x", "assistant: text=a", "tool: result=interrupted", "assistant: text=c"}
		},
		"short":   func(o *outcome) { o.transcript = o.transcript[:2] },
		"problem": func(o *outcome) { o.problems = []string{"orphan"} },
	}
	for name, mod := range cases {
		got := ref
		got.transcript = slices.Clone(ref.transcript)
		mod(&got)
		if probs, _ := check(sc, ref, got); len(probs) == 0 {
			t.Errorf("%s: not flagged", name)
		}
	}
	ok := ref
	ok.transcript = []string{"user: text=x", "assistant: text=a", "tool: result=interrupted", "assistant: text=b"}
	ok.files = map[string]string{"log.txt": ""}
	if probs, interrupted := check(sc, ref, ok); len(probs) != 0 || !interrupted {
		t.Errorf("an interrupted call flagged: %v %v", probs, interrupted)
	}
}
