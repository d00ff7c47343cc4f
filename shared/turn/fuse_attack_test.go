package turn_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// Attacks on fuse.go (a model phase running its step's read-only calls),
// each run against the unfused engine (FuseWithin < 0) as its control.

// freshIDs is a model whose tool call ids are new on every stream, as a
// real provider's are (toolu_…): the scripted model's are deterministic.
type freshIDs struct {
	inner contracts.ModelClient
	n     atomic.Int64
}

func (f *freshIDs) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	k := f.n.Add(1)
	rename := func(tc *contracts.ToolCall) { tc.ID = fmt.Sprintf("toolu_%d_%s", k, tc.ID) }
	resp, err := f.inner.Stream(ctx, req, func(ev contracts.ModelEvent) error {
		if ev.ToolCall != nil {
			c := *ev.ToolCall
			rename(&c)
			ev.ToolCall = &c
		}
		return emit(ev)
	})
	for i := range resp.ToolCalls {
		rename(&resp.ToolCalls[i])
	}
	return resp, err
}

// crashOnComplete panics (a process death) at the first stream completion
// write, before it is stored.
type crashOnComplete struct {
	contracts.StreamStore
	crashed atomic.Bool
}

func (c *crashOnComplete) Complete(ctx context.Context, key string, resp contracts.ModelResponse) (contracts.ModelResponse, error) {
	if c.crashed.CompareAndSwap(false, true) {
		panic("review: the process died before the completion was stored")
	}
	return c.StreamStore.Complete(ctx, key, resp)
}

// runCounter counts CreateRun calls (each a new workflow run when created)
// and lets a test act right after a run was created.
type runCounter struct {
	contracts.WorkflowStore
	mu      sync.Mutex
	created []contracts.WorkflowRun
	after   func(contracts.WorkflowRun)
}

func (r *runCounter) CreateRun(ctx context.Context, run contracts.WorkflowRun) (contracts.WorkflowRun, bool, error) {
	got, created, err := r.WorkflowStore.CreateRun(ctx, run)
	if err == nil && created {
		r.mu.Lock()
		r.created = append(r.created, got)
		after := r.after
		r.mu.Unlock()
		if after != nil {
			after(got)
		}
	}
	return got, created, err
}

func (r *runCounter) runs() []contracts.WorkflowRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]contracts.WorkflowRun(nil), r.created...)
}

func settleTurn(h *enginetest.Harness, subID string) contracts.Submission {
	for range 30 {
		h.Drain()
		if got := h.Get(subID); got.Phase.Terminal() {
			return got
		}
		h.Clock.Advance(10 * time.Minute)
		h.Repair()
	}
	return h.Get(subID)
}

// TestWorkflowCallIsNotFused: run_workflow is read-only for recovery but
// starts work outside the sandbox (contracts.SandboxedToolset), so the
// model phase does not run it: fused, its run would start before the
// step's completion is stored, and a crash there (here: at the
// completion write) would make the next attempt buy the stream again —
// with a real provider's fresh call ids, a second run, the sub-agents
// running twice.
func TestWorkflowCallIsNotFused(t *testing.T) {
	t.Run("unfused control", func(t *testing.T) { crashBeforeCompletion(t, -1) })
	t.Run("fused", func(t *testing.T) { crashBeforeCompletion(t, time.Hour) })
	t.Run("fused default FuseWithin", func(t *testing.T) { crashBeforeCompletion(t, 0) })
}

func crashBeforeCompletion(t *testing.T, within time.Duration) {
	rc := &runCounter{}
	crash := &crashOnComplete{}
	h := enginetest.New(t,
		enginetest.Workflows(&enginetest.InProcess{}, func(s contracts.WorkflowStore) contracts.WorkflowStore { rc.WorkflowStore = s; return rc }),
		func(p *assemble.Ports) {
			p.Models["fresh"] = &freshIDs{inner: p.Models["scripted"]}
			crash.StreamStore = p.Streams
			p.Streams = crash
		})
	h.RT.Engine.FuseWithin = within // an hour: a loaded machine still starts the run within it
	s := h.Session(contracts.SessionSpec{Model: "fresh:workflow", Tools: []contracts.ToolConfig{{Name: "run_workflow"}}})
	sub := h.Submit(s.ID, "do it in parallel")
	got := settleTurn(h, sub.ID)
	runs := rc.runs()
	t.Logf("turn %s %q; workflow runs created: %d", got.Phase, got.Error, len(runs))
	for _, r := range runs {
		cur, _ := rc.GetRun(context.Background(), r.ID)
		t.Logf("  run %s parent call %s: %s", r.ID, r.Parent.CallID, cur.Status)
	}
	if !crash.crashed.Load() {
		t.Fatal("the crash point never fired")
	}
	if len(runs) != 1 {
		t.Errorf("%d workflow runs for one run_workflow call that reached the tools phase once: want 1 (a run started before the completion was stored was orphaned)", len(runs))
	}
}

// TestCancelledTurnCancelsTheRunItsCallStarted: a cancel that lands
// right after a run_workflow call started its run cancels the run too —
// which it could not if the model phase had started it (the turn would
// end CANCELLED from MODEL, whose record holds no tool requests for the
// Ending hook to find the run by).
func TestCancelledTurnCancelsTheRunItsCallStarted(t *testing.T) {
	t.Run("unfused control", func(t *testing.T) { cancelAfterRunStarts(t, -1) })
	t.Run("fused", func(t *testing.T) { cancelAfterRunStarts(t, time.Hour) })
	t.Run("fused default FuseWithin", func(t *testing.T) { cancelAfterRunStarts(t, 0) })
}

func cancelAfterRunStarts(t *testing.T, within time.Duration) {
	rc := &runCounter{}
	var h *enginetest.Harness
	var cancelErr error
	rc.after = func(run contracts.WorkflowRun) {
		if run.Parent == nil {
			return
		}
		_, cancelErr = h.RT.Engine.Cancel(context.Background(), run.Parent.SessionID, run.Parent.SubmissionID, "user pressed stop")
	}
	h = enginetest.New(t, enginetest.Workflows(&enginetest.InProcess{}, func(s contracts.WorkflowStore) contracts.WorkflowStore { rc.WorkflowStore = s; return rc }))
	h.RT.Engine.FuseWithin = within
	s := h.Session(contracts.SessionSpec{Model: "scripted:workflow", Tools: []contracts.ToolConfig{{Name: "run_workflow"}}})
	sub := h.Submit(s.ID, "do it in parallel")
	for range 10 {
		h.Drain()
		h.Clock.Advance(10 * time.Minute)
	}
	if cancelErr != nil {
		t.Fatalf("cancel: %v", cancelErr)
	}
	got := h.Get(sub.ID)
	runs := rc.runs()
	if got.Phase != contracts.PhaseCancelled || len(runs) != 1 {
		t.Fatalf("turn %s, %d runs: want CANCELLED and the one run", got.Phase, len(runs))
	}
	run, err := rc.GetRun(context.Background(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("parent turn %s (cancelled at step %d phase %s); its run %s: %s; model calls %d", got.Phase, got.Step, got.FailedPhase, run.ID, run.Status, h.Model.Calls())
	if run.Status != contracts.RunCancelled {
		t.Errorf("the run started by the cancelled turn's call is %s, want %s (its sub-agents ran for a cancelled turn)", run.Status, contracts.RunCancelled)
	}
}

// ignoring wraps a harness's sandboxes: the first ListDir ignores its
// context and returns only when released.
type ignoring struct {
	contracts.SandboxProvider
	release chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (p *ignoring) Acquire(ctx context.Context, id string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	sb, err := p.SandboxProvider.Acquire(ctx, id, spec)
	if err != nil {
		return nil, err
	}
	return &ignoringSandbox{SandboxAPI: sb, p: p}, nil
}

type ignoringSandbox struct {
	contracts.SandboxAPI
	p *ignoring
}

func (s *ignoringSandbox) ListDir(ctx context.Context, path string) ([]contracts.FileInfo, error) {
	first := false
	s.p.once.Do(func() { first = true })
	if first {
		close(s.p.entered)
		<-s.p.release // ignores ctx (a blocking syscall, a driver without deadlines)
	}
	return s.SandboxAPI.ListDir(context.Background(), path)
}

// TestFusedCallThatIgnoresCancelIsNotWaitedFor: a read-only call that
// does not stop when its context ends does not hold the model phase past
// FuseWithin: the phase stores the step's completion and gives the step
// to the tools phase while the call is still blocked; the step's stream
// is bought once. (Held, Once would not return and the test would time
// out.)
func TestFusedCallThatIgnoresCancelIsNotWaitedFor(t *testing.T) {
	ig := &ignoring{release: make(chan struct{}), entered: make(chan struct{})}
	h := enginetest.New(t, func(p *assemble.Ports) { ig.SandboxProvider = p.Sandboxes; p.Sandboxes = ig })
	h.RT.Engine.FuseWithin = time.Millisecond // the first listing never ends before it is released
	h.RT.Workers.Chain = nil                  // the tools phase waits in the queue
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	sub := h.Submit(s.ID, "go")
	if _, err := h.RT.Workers.Once(context.Background(), contracts.QueueModel, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ig.entered:
	default:
		t.Fatal("the model phase did not run the call")
	}
	rec := h.Get(sub.ID)
	st, err := h.Store.GetStream(context.Background(), rec.StreamKey)
	if rec.Phase != contracts.PhaseTools || err != nil || st.Done == nil {
		t.Fatalf("while the call is blocked: %s, stream completed %v (%v): want TOOLS with the completion stored", rec.Phase, st.Done != nil, err)
	}
	close(ig.release)
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	if n := h.Model.Calls(); n != 2 {
		t.Errorf("%d model calls for the two-step turn, want 2", n)
	}
}

// TestStepOverTheTokenLimitRunsNoCall: fuse checks the
// limits on the record before the step's usage is added; recordModel then
// ends the turn FAILED limit_tripped:tokens — after fuse already ran the
// step's calls. Without fuse no call of that step runs (the turn fails in
// the model phase's closing write). With run_workflow that is a workflow
// run (three sub-agent turns) started by a turn that failed on its limit.
func TestStepOverTheTokenLimitRunsNoCall(t *testing.T) {
	for _, c := range []struct {
		name   string
		within time.Duration
	}{{"unfused control", -1}, {"fused", time.Hour}} {
		t.Run(c.name, func(t *testing.T) {
			rc := &runCounter{}
			h := enginetest.New(t, enginetest.Workflows(&enginetest.InProcess{}, func(s contracts.WorkflowStore) contracts.WorkflowStore { rc.WorkflowStore = s; return rc }))
			h.RT.Engine.FuseWithin = c.within
			s := h.Session(contracts.SessionSpec{Model: "scripted:workflow", Tools: []contracts.ToolConfig{{Name: "run_workflow"}},
				Limits: contracts.Limits{MaxTokens: 1}})
			sub := h.Submit(s.ID, "do it in parallel")
			for range 5 {
				h.Drain()
				h.Clock.Advance(10 * time.Minute)
			}
			got := h.Get(sub.ID)
			t.Logf("turn %s %q; runs started %d; model calls %d", got.Phase, got.Error, len(rc.runs()), h.Model.Calls())
			if got.Phase != contracts.PhaseFailed {
				t.Fatalf("turn %s, want FAILED on its token limit", got.Phase)
			}
			if n := len(rc.runs()); n != 0 {
				t.Errorf("a step that tripped the token limit started %d workflow run(s): its calls ran though the turn ended before its tools phase", n)
			}
		})
	}
}

// unavailable wraps a harness's sandboxes: every ListDir fails as an
// unreachable sandbox does.
type unavailable struct{ contracts.SandboxProvider }

func (p *unavailable) Acquire(ctx context.Context, id string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	sb, err := p.SandboxProvider.Acquire(ctx, id, spec)
	if err != nil {
		return nil, err
	}
	return unavailableSandbox{sb}, nil
}

type unavailableSandbox struct{ contracts.SandboxAPI }

func (unavailableSandbox) ListDir(context.Context, string) ([]contracts.FileInfo, error) {
	return nil, fmt.Errorf("sandbox gone: %w", contracts.ErrUnavailable)
}

// TestFailedCallIsCountedOnce: one call, one failure (its sandbox
// unreachable): the model phase's attempt gives up unmeasured, and the
// tools phase's run records its duration (outcome error) and the failure.
func TestFailedCallIsCountedOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		within time.Duration
	}{{"unfused control", -1}, {"fused", time.Hour}} {
		t.Run(c.name, func(t *testing.T) {
			lines := emfLines(t)
			h := enginetest.New(t, func(p *assemble.Ports) { p.Sandboxes = &unavailable{p.Sandboxes} })
			h.RT.Engine.FuseWithin = c.within
			s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
			sub := h.Submit(s.ID, "go")
			h.Drain()
			m := lines()
			failures, errs := len(m["cairn.tool.failures"]), count(m["cairn.tool.duration"], map[string]string{"outcome": "error"})
			t.Logf("turn %s; tool failures %d, error durations %d", h.Get(sub.ID).Phase, failures, errs)
			if failures != 1 || errs != 1 {
				t.Errorf("one failed call: %d tool failures and %d error durations recorded, want 1 each", failures, errs)
			}
		})
	}
}

// cancelling wraps a harness's sandboxes: the first ListDir cancels the
// turn (a user's stop arriving while the fused call runs), then lists.
type cancelling struct {
	contracts.SandboxProvider
	cancel func()
	once   sync.Once
}

func (p *cancelling) Acquire(ctx context.Context, id string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	sb, err := p.SandboxProvider.Acquire(ctx, id, spec)
	if err != nil {
		return nil, err
	}
	return &cancellingSandbox{SandboxAPI: sb, p: p}, nil
}

type cancellingSandbox struct {
	contracts.SandboxAPI
	p *cancelling
}

func (s *cancellingSandbox) ListDir(ctx context.Context, path string) ([]contracts.FileInfo, error) {
	s.p.once.Do(s.p.cancel)
	return s.SandboxAPI.ListDir(ctx, path)
}

// TestCancelWhileFusingEndsCancelled: a cancel that lands while the
// model phase runs its step's call ends the turn CANCELLED, with no tool
// node or tool result written for the step.
func TestCancelWhileFusingEndsCancelled(t *testing.T) {
	t.Run("unfused control", func(t *testing.T) { cancelDuringListDir(t, -1) })
	t.Run("fused", func(t *testing.T) { cancelDuringListDir(t, time.Hour) })
}

func cancelDuringListDir(t *testing.T, within time.Duration) {
	p := &cancelling{}
	h := enginetest.New(t, func(ports *assemble.Ports) { p.SandboxProvider = ports.Sandboxes; ports.Sandboxes = p })
	h.RT.Engine.FuseWithin = within
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	sub := h.Submit(s.ID, "go")
	var cerr error
	p.cancel = func() { _, cerr = h.RT.Engine.Cancel(context.Background(), s.ID, sub.ID, "stop") }
	h.Drain()
	if cerr != nil {
		t.Fatal(cerr)
	}
	got := h.Get(sub.ID)
	keys := eventKeys(t, h, sub.ID)
	t.Logf("turn %s; events %v", got.Phase, keys)
	recs, _ := h.Store.ToolRecords(context.Background(), sub.ID, 0)
	if got.Phase != contracts.PhaseCancelled {
		t.Fatalf("turn %s with %d tool records: want CANCELLED", got.Phase, len(recs))
	}
	nodes := h.Transcript(s.ID)
	if len(recs) != 0 && within >= 0 || len(nodes) > 2 {
		t.Errorf("a cancelled step left %d tool records and the transcript %q", len(recs), nodes)
	}
}

// panicking wraps a harness's sandboxes: every ListDir panics.
type panicking struct{ contracts.SandboxProvider }

func (p *panicking) Acquire(ctx context.Context, id string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	sb, err := p.SandboxProvider.Acquire(ctx, id, spec)
	if err != nil {
		return nil, err
	}
	return panickingSandbox{sb}, nil
}

type panickingSandbox struct{ contracts.SandboxAPI }

func (panickingSandbox) ListDir(context.Context, string) ([]contracts.FileInfo, error) {
	panic("a tool's bug")
}

// TestPanickingCallDoesNotCrashTheModelPhase: a read-only call that
// panics while the model phase runs it does not take the process down
// (the call runs on its own goroutine there): the step goes to the tools
// phase with its completion stored, whose handler's panic the worker
// recovers as it always did (the message is delivered again later).
func TestPanickingCallDoesNotCrashTheModelPhase(t *testing.T) {
	h := enginetest.New(t, func(p *assemble.Ports) { p.Sandboxes = &panicking{p.Sandboxes} })
	h.RT.Engine.FuseWithin = time.Hour
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	sub := h.Submit(s.ID, "go")
	h.Drain()
	got := h.Get(sub.ID)
	st, err := h.Store.GetStream(context.Background(), got.StreamKey)
	if got.Phase != contracts.PhaseTools || err != nil || st.Done == nil {
		t.Fatalf("%s %s, completion stored %v (%v): want the step in the tools phase, its completion stored", got.Phase, got.Error, st.Done != nil, err)
	}
}
