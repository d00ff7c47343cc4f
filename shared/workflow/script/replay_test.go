package script_test

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

// fanOutJoin fans out one node per document, retries the failures in
// parallel, starts a keyed side node, then joins everything in a blocking
// call: node count and control flow depend on the results.
const fanOutJoin = `
def summarise(d):
    return start("summarise " + d)

def main(input):
    firsts = map(summarise, input["docs"])
    retries = [start("retry " + r.node) for r in firsts if not r.ok]
    again = wait(retries)
    outputs = [r.output for r in firsts if r.ok] + [r.output for r in again]
    audit = start("audit", key="audit", tools=["read_file"])
    combined = agent("combine " + ",".join(outputs), key="combine", max_steps=5)
    return {"combined": combined.output, "audit": wait(audit).ok, "retried": len(retries), "at": now()}
`

const fanOutInput = `{"docs": ["a", "b", "c", "d", "e", "f", "g", "h"]}`

// outcome is the (deterministic) result of a node asking for prompt:
// about a quarter of first attempts fail; retries succeed.
func outcome(prompt string) contracts.NodeResult {
	h := fnv.New32a()
	h.Write([]byte(prompt))
	if !strings.HasPrefix(prompt, "retry ") && h.Sum32()%4 == 0 {
		return contracts.NodeResult{OK: false, Error: "failed " + prompt}
	}
	return contracts.NodeResult{OK: true, Output: "out(" + prompt + ")"}
}

func replayRequest(res results) contracts.EvalRequest {
	return contracts.EvalRequest{Script: fanOutJoin, Input: json.RawMessage(fanOutInput), RunID: runID,
		Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Results: res}
}

type replay struct {
	value       string
	nodes       map[string]string // id → pending node JSON (spec, seq, key)
	evaluations int
}

// drive plays a workflow driver: evaluate, record every pending node, let
// some of them finish (all, or a random subset in a random order, with
// evaluations in between), until the script returns.
func drive(t *testing.T, rng *rand.Rand) replay {
	t.Helper()
	res := results{}
	out := replay{nodes: map[string]string{}}
	for {
		r := script.Evaluate(context.Background(), replayRequest(res))
		out.evaluations++
		if out.evaluations > 1000 {
			t.Fatal("no progress")
		}
		// Same script + same results ⇒ the same response, byte for byte,
		// whatever order the results map was filled in.
		again := script.Evaluate(context.Background(), replayRequest(maps.Clone(res)))
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("two evaluations differ:\n%s\n%s", a, b)
		}
		switch r.Status {
		case contracts.EvalDone:
			out.value = string(r.Value)
			return out
		case contracts.EvalFailed:
			t.Fatalf("failed: %s", r.Error)
		}
		for i, p := range r.Pending {
			if _, done := res[p.ID]; done {
				t.Fatalf("node %s pending although its result is known", p.ID)
			}
			if i > 0 && p.Seq <= r.Pending[i-1].Seq {
				t.Fatalf("pending not in seq order: %v", pendingIDs(r))
			}
			pj, _ := json.Marshal(p)
			if prev, seen := out.nodes[p.ID]; seen && prev != string(pj) {
				t.Fatalf("node %s changed:\n%s\n%s", p.ID, prev, pj)
			}
			out.nodes[p.ID] = string(pj)
		}
		arriving := slices.Clone(r.Pending)
		if rng != nil {
			rng.Shuffle(len(arriving), func(i, j int) { arriving[i], arriving[j] = arriving[j], arriving[i] })
			arriving = arriving[:1+rng.Intn(len(arriving))]
		}
		for _, p := range arriving {
			res[p.ID] = outcome(p.Spec.Prompt)
			if rng != nil && rng.Intn(3) == 0 {
				break // evaluate before the rest arrives (they stay pending)
			}
		}
	}
}

func TestReplayDeterminism(t *testing.T) {
	want := drive(t, nil)
	if !strings.Contains(want.value, `"retried":`) || len(want.nodes) < 11 {
		t.Fatalf("reference run too small: %s, %d nodes", want.value, len(want.nodes))
	}
	for seed := int64(1); seed <= 200; seed++ {
		got := drive(t, rand.New(rand.NewSource(seed)))
		if got.value != want.value {
			t.Fatalf("seed %d: value %s, want %s", seed, got.value, want.value)
		}
		if !maps.Equal(got.nodes, want.nodes) {
			t.Fatalf("seed %d: nodes differ:\n%v\nwant\n%v", seed, got.nodes, want.nodes)
		}
	}
	t.Logf("reference: %d nodes, %d evaluations, value %s", len(want.nodes), want.evaluations, want.value)
}

// TestFanOutInOneEvaluation: every independent node is pending after the
// first evaluation, not one at a time.
func TestFanOutInOneEvaluation(t *testing.T) {
	r := script.Evaluate(context.Background(), replayRequest(nil))
	if r.Status != contracts.EvalPending || len(r.Pending) != 8 {
		t.Fatalf("first evaluation: %s with %d pending, want all 8 documents", r.Status, len(r.Pending))
	}
	for i, p := range r.Pending {
		if p.Seq != i || p.ID != id(i) {
			t.Errorf("pending[%d] = seq %d id %s, want seq %d id %s", i, p.Seq, p.ID, i, id(i))
		}
	}
}
