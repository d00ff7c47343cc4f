package turn_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/pricing"
	"github.com/cairnrun/cairn/shared/telemetry"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/testkit/spantest"
	"github.com/cairnrun/cairn/shared/turn"
)

// emfLines turns EMF on for the test and returns a function reading the
// lines written so far, by metric name.
func emfLines(t *testing.T) func() map[string][]map[string]any {
	var buf bytes.Buffer
	telemetry.EMF(&buf)
	t.Cleanup(func() { telemetry.EMF(nil) })
	return func() map[string][]map[string]any {
		out := map[string][]map[string]any{}
		sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
		for sc.Scan() {
			var doc map[string]any
			if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
				t.Fatalf("not JSON: %s", sc.Bytes())
			}
			dir := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
			name := dir["Metrics"].([]any)[0].(map[string]any)["Name"].(string)
			out[name] = append(out[name], doc)
		}
		return out
	}
}

func count(docs []map[string]any, dims map[string]string) int {
	n := 0
next:
	for _, d := range docs {
		for k, v := range dims {
			if d[k] != v {
				continue next
			}
		}
		n++
	}
	return n
}

// TestATurnsMetrics: the demo turn (four model steps, four tool calls, a
// commit — part of the last model phase's write, as the embedded store
// batches, as is the read-only step's call: two tools phases) records one phase duration and one queue age per handler run,
// a latency and its tokens per model call (summing to the turn's usage),
// a duration per tool call, and one committed turn.
func TestATurnsMetrics(t *testing.T) {
	lines := emfLines(t)
	h := enginetest.New(t)
	sub := h.Accept("scripted:demo")
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	m := lines()
	for phase, want := range map[string]int{"model": 4, "tools": 2, "commit": 0} {
		if n := count(m[telemetry.PhaseDuration.Name], map[string]string{"phase": phase, "outcome": "ok"}); n != want {
			t.Errorf("%d %s phase durations, want %d", n, phase, want)
		}
		if n := count(m[telemetry.QueueAge.Name], map[string]string{"phase": phase}); n != want {
			t.Errorf("%d %s queue ages, want %d", n, phase, want)
		}
	}
	if n := len(m[telemetry.ModelLatency.Name]); n != 4 {
		t.Errorf("%d model latencies, want 4", n)
	}
	tokens := map[string]float64{}
	for _, d := range m[telemetry.ModelTokens.Name] {
		if d["provider"] != "scripted" || d["model"] != "any" { // the price table's entry, scripted:*
			t.Errorf("tokens line names %v/%v", d["provider"], d["model"])
		}
		tokens[d["direction"].(string)] += d[telemetry.ModelTokens.Name].(float64)
	}
	if tokens["input"] != float64(got.Usage.InputTokens) || tokens["output"] != float64(got.Usage.OutputTokens) || got.Usage.InputTokens == 0 {
		t.Errorf("tokens %v, want the turn's usage %+v", tokens, got.Usage)
	}
	if n := count(m[telemetry.ToolDuration.Name], map[string]string{"outcome": "ok"}); n != 4 {
		t.Errorf("%d ok tool durations, want 4: %v", n, m[telemetry.ToolDuration.Name])
	}
	if n := count(m[telemetry.Turns.Name], map[string]string{"outcome": "committed"}); n != 1 || len(m[telemetry.Turns.Name]) != 1 {
		t.Errorf("turns: %v, want one committed", m[telemetry.Turns.Name])
	}
}

// TestAFailedTurnCountsItsReason: a turn over its step limit counts as
// failed with reason limit_tripped (the class, not the detail).
func TestAFailedTurnCountsItsReason(t *testing.T) {
	lines := emfLines(t)
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:multi", Limits: contracts.Limits{MaxSteps: 1}})
	sub := h.Submit(s.ID, "go")
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseFailed {
		t.Fatalf("%s", got.Phase)
	}
	turns := lines()[telemetry.Turns.Name]
	if len(turns) != 1 || turns[0]["outcome"] != "failed" || turns[0]["reason"] != "limit_tripped" {
		t.Fatalf("turns: %v, want one failed limit_tripped", turns)
	}
}

// TestRepairCountsItsActions: a re-drive of a lost message is a repair
// action.
func TestRepairCountsItsActions(t *testing.T) {
	lines := emfLines(t)
	h := enginetest.New(t)
	sub := h.Accept("scripted:plain")
	if n := h.Lose(contracts.QueueModel); n != 1 {
		t.Fatalf("lost %d messages", n)
	}
	h.Clock.Advance(turn.DefaultLeaseTTL * 2)
	h.Repair()
	h.Drain()
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	actions := lines()[telemetry.RepairActions.Name]
	if len(actions) == 0 || actions[0]["action"] == "none" {
		t.Fatalf("repair actions: %v", actions)
	}
}

// TestAConflictIsCounted: a turn's terminal write that loses to another
// writer (here: one that moves the record just before it) counts one
// lease conflict in the phase that ends the turn (the model phase's, as
// the embedded store commits a final answer in it) and an event on its
// phase span, and the turn is not counted as ended (its end did not
// happen).
func TestAConflictIsCounted(t *testing.T) {
	lines := emfLines(t)
	exp := spantest.Record(t)
	raced := false
	h := enginetest.New(t, func(p *assemble.Ports) {
		p.Journal = racingJournal{JournalStore: p.Journal, race: func(ctx context.Context, j contracts.JournalStore, sub contracts.Submission) error {
			if raced || !sub.Phase.Terminal() {
				return nil
			}
			raced = true
			cur, err := j.GetSubmission(ctx, sub.ID)
			if err != nil {
				return err
			}
			_, err = j.UpdateSubmission(ctx, cur, cur.Version)
			return err
		}}
	})
	sub := h.Accept("scripted:plain")
	h.Drain()
	if !raced {
		t.Fatal("the turn never ended")
	}
	conflicts := lines()[telemetry.LeaseConflicts.Name]
	if count(conflicts, map[string]string{"phase": "model"}) != 1 {
		t.Fatalf("conflicts %v, want one in model", conflicts)
	}
	events := 0
	for _, s := range exp.GetSpans() {
		for _, ev := range s.Events {
			if ev.Name == "cairn.conflict" && s.Name == "cairn.phase model" {
				events++
			}
		}
	}
	if events != 1 {
		t.Fatalf("%d conflict events on model spans, want 1", events)
	}
	if got := h.Get(sub.ID); got.Phase == contracts.PhaseCommitted {
		t.Fatalf("the losing commit's end was written")
	}
	if n := len(lines()[telemetry.Turns.Name]); n != 0 {
		t.Fatalf("%d turns counted for an end that lost", n)
	}
}

// TestDimensionsAreBounded: what a tenant or a model makes up never
// becomes a dimension value — a tool the toolset does not know is
// "unknown", a model without a price-table entry "other".
func TestDimensionsAreBounded(t *testing.T) {
	lines := emfLines(t)
	h := enginetest.New(t)
	for i := range 3 {
		s := h.Session(contracts.SessionSpec{Model: "scripted:call"})
		h.Submit(s.ID, fmt.Sprintf("bogus_tool_%d {}", i))
	}
	h.Drain()
	m := lines()
	for _, name := range []string{telemetry.ToolDuration.Name, telemetry.ToolFailures.Name} {
		if len(m[name]) == 0 {
			t.Fatalf("no %s lines", name)
		}
		for _, d := range m[name] {
			if d["tool"] != "unknown" {
				t.Errorf("%s: tool dimension %v for a made-up tool", name, d["tool"])
			}
		}
	}
	e := h.RT.Engine
	prices := pricing.Default()
	e.Prices = &prices
	if got := e.ModelDim("anthropic:claude-sonnet-4-5-20990101"); got != "claude-sonnet-4" {
		t.Errorf("a priced model's dimension %q", got)
	}
	if got := e.ModelDim("anthropic:made-up-" + strings.Repeat("x", 50)); got != "other" {
		t.Errorf("an unpriced model's dimension %q", got)
	}
}

// racingJournal calls race before each submission write, in the writer's
// own batch: another writer's write just before it.
type racingJournal struct {
	contracts.JournalStore
	race func(ctx context.Context, j contracts.JournalStore, sub contracts.Submission) error
}

func (r racingJournal) UpdateSubmission(ctx context.Context, sub contracts.Submission, version int64) (contracts.Submission, error) {
	if err := r.race(ctx, r.JournalStore, sub); err != nil {
		return contracts.Submission{}, err
	}
	return r.JournalStore.UpdateSubmission(ctx, sub, version)
}
