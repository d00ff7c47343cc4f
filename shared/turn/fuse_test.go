package turn_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/testkit/spantest"
)

// listings wraps a harness's sandboxes, counting list_dir's sandbox calls;
// with block, the first one waits for its context to end.
type listings struct {
	contracts.SandboxProvider
	block bool

	mu    sync.Mutex
	calls int
}

func (l *listings) Acquire(ctx context.Context, id string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	sb, err := l.SandboxProvider.Acquire(ctx, id, spec)
	if err != nil {
		return nil, err
	}
	return &listingSandbox{SandboxAPI: sb, l: l}, nil
}

func (l *listings) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

type listingSandbox struct {
	contracts.SandboxAPI
	l *listings
}

func (s *listingSandbox) ListDir(ctx context.Context, path string) ([]contracts.FileInfo, error) {
	s.l.mu.Lock()
	s.l.calls++
	first := s.l.calls == 1
	s.l.mu.Unlock()
	if first && s.l.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.SandboxAPI.ListDir(ctx, path)
}

func listingHarness(t *testing.T, block bool) (*enginetest.Harness, *listings) {
	l := &listings{block: block}
	h := enginetest.New(t, func(p *assemble.Ports) { l.SandboxProvider = p.Sandboxes; p.Sandboxes = l })
	return h, l
}

// benchTurn runs the bench turn (list_dir, then an answer) in a new
// session of h, stepped to its end, which must be COMMITTED.
func benchTurn(t *testing.T, h *enginetest.Harness) (contracts.Session, contracts.Submission) {
	t.Helper()
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	sub := h.Submit(s.ID, "go")
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	return s, sub
}

// phaseSpans counts a turn's spans by name, and names the phase each tool
// span is under.
func phaseSpans(t *testing.T, exp *tracetest.InMemoryExporter, subID string) (map[string]int, []string) {
	t.Helper()
	_, spans := ofTurn(t, exp, subID)
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanContext.SpanID().String()] = s.Name
	}
	n, under := map[string]int{}, []string(nil)
	for _, s := range spans {
		n[s.Name]++
		if strings.HasPrefix(s.Name, "cairn.tool ") {
			under = append(under, names[s.Parent.SpanID().String()])
		}
	}
	return n, under
}

// eventKeys is a turn's event keys in order.
func eventKeys(t *testing.T, h *enginetest.Harness, subID string) []string {
	t.Helper()
	evs, err := h.Store.ListEvents(context.Background(), subID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range evs {
		keys = append(keys, e.Key)
	}
	return keys
}

// TestReadOnlyStepRunsInItsModelPhase: a step whose calls are all
// read-only and allowed runs them in its model phase and writes their
// results, the tool node and the advance with the model's closing write
// (no tools phase): the call runs once, its record and events are those
// the tools phase writes, in the same order.
func TestReadOnlyStepRunsInItsModelPhase(t *testing.T) {
	exp := spantest.Record(t)
	h, l := listingHarness(t, false)
	h.RT.Engine.FuseWithin = time.Hour // a saturated machine's list_dir is still within it
	s, sub := benchTurn(t, h)
	if n := l.count(); n != 1 {
		t.Errorf("list_dir ran %d times, want 1", n)
	}
	n, under := phaseSpans(t, exp, sub.ID)
	if n["cairn.phase tools"] != 0 || n["cairn.phase model"] != 2 || len(under) != 1 || under[0] != "cairn.phase model" {
		t.Errorf("spans %v, tool spans under %v: want two model phases, no tools phase, the call under the first", n, under)
	}
	recs, err := h.Store.ToolRecords(context.Background(), sub.ID, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("tool records %v %v", recs, err)
	}
	for id, r := range recs {
		if !r.Started || r.Result == nil || r.Result.IsError || r.Result.CallID != id {
			t.Errorf("record of %s: %+v", id, r)
		}
	}
	keys := strings.Join(eventKeys(t, h, sub.ID), " ")
	if i, j, k := strings.Index(keys, "tool_started/0/"), strings.Index(keys, "tool_finished/0/"), strings.Index(keys, "step/1"); i < 0 || j < i || k < j {
		t.Errorf("events %s: want tool_started, tool_finished, then step 1", keys)
	}
	nodes := h.Transcript(s.ID)
	if len(nodes) != 4 || !strings.Contains(nodes[2], "tool") {
		t.Errorf("transcript %q: want user, assistant, tool, assistant", nodes)
	}
}

// TestSlowReadOnlyCallGoesToTheToolsPhase: a read-only call not done
// within FuseWithin is cancelled and its step goes to the tools phase,
// which runs it again; the cancelled run leaves nothing (one started and
// one finished event, the result the tools phase got).
func TestSlowReadOnlyCallGoesToTheToolsPhase(t *testing.T) {
	exp := spantest.Record(t)
	h, l := listingHarness(t, true)
	h.RT.Engine.FuseWithin = time.Millisecond // the first listing never ends on its own
	_, sub := benchTurn(t, h)
	if n := l.count(); n != 2 {
		t.Errorf("list_dir ran %d times, want 2 (cancelled in the model phase, then in the tools phase)", n)
	}
	// (the dropped attempt's span ends when its call returns, which the
	// model phase does not wait for: it may not be exported yet)
	n, under := phaseSpans(t, exp, sub.ID)
	if n["cairn.phase tools"] != 1 || !slices.Contains(under, "cairn.phase tools") {
		t.Errorf("spans %v, tool spans under %v: want one tools phase running the call", n, under)
	}
	started, finished := 0, 0
	for _, k := range eventKeys(t, h, sub.ID) {
		started += strings.Count(k, "tool_started/")
		finished += strings.Count(k, "tool_finished/")
	}
	if started != 1 || finished != 1 {
		t.Errorf("%d started and %d finished events, want 1 each", started, finished)
	}
	recs, err := h.Store.ToolRecords(context.Background(), sub.ID, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("tool records %v %v", recs, err)
	}
	for _, r := range recs {
		if r.Result == nil || r.Result.IsError || strings.Contains(r.Result.Content, "deadline") {
			t.Errorf("result %+v: want the tools phase's listing", r.Result)
		}
	}
}

// TestAskedReadOnlyCallWaitsForItsApproval: a read-only call the policy
// asks about is not run by the model phase: the step parks in the tools
// phase for a decision, nothing run.
func TestAskedReadOnlyCallWaitsForItsApproval(t *testing.T) {
	h, l := listingHarness(t, false)
	h.RT.Engine.FuseWithin = time.Hour
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}},
		Policy: contracts.Policy{Tools: map[string]contracts.Decision{"list_dir": contracts.Ask}}})
	sub := h.Submit(s.ID, "go")
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseTools || len(got.Approvals) != 1 || got.Approvals[0].Decision != "" {
		t.Fatalf("%s, approvals %+v: want TOOLS waiting for one decision", got.Phase, got.Approvals)
	}
	if n := l.count(); n != 0 {
		t.Errorf("list_dir ran %d times before its approval", n)
	}
}
