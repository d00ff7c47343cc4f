package workflowtest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/conformance/internal/unique"
)

// uniq returns an id prefix unique to this test and this run.
func uniq(t *testing.T) string { return unique.Prefix(t) }

// base is a fixed instant with nanoseconds and a non-UTC offset, to prove
// timestamps round-trip exactly.
var base = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 2*3600))

func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

// bigJSON is a compact JSON object of about n bytes.
func bigJSON(n int) json.RawMessage {
	return json.RawMessage(`{"data":"` + strings.Repeat("0123456789abcdef", n/16+1)[:n] + `","n":1}`)
}

func newWorkflow(id string) contracts.Workflow {
	return contracts.Workflow{
		ID:        id,
		Owner:     "owner-1",
		Name:      "nightly " + id,
		Script:    "def main(input):\n    return agent(prompt=input[\"q\"])\n",
		CreatedAt: at(0),
	}
}

func newRun(id, workflowID string, started time.Time) contracts.WorkflowRun {
	return contracts.WorkflowRun{
		ID:         id,
		WorkflowID: workflowID,
		Script:     "x = agent(prompt=\"hi\")\n",
		Input:      json.RawMessage(`{"q":"hello","n":[1,2.5,true,null],"o":{"k":"v"}}`),
		Status:     contracts.RunRunning,
		StartedAt:  started,
		UpdatedAt:  started,
	}
}

func newNode(runID, id string, seq int) contracts.WorkflowNode {
	return contracts.WorkflowNode{
		RunID:        runID,
		ID:           id,
		Seq:          seq,
		Spec:         contracts.NodeSpec{Prompt: "do " + id, Model: "scripted:demo"},
		SessionID:    "ses-" + id,
		SubmissionID: "sub-" + id,
		CreatedAt:    at(seq),
	}
}

func newSchedule(id, workflowID string) contracts.Schedule {
	return contracts.Schedule{
		ID:         id,
		WorkflowID: workflowID,
		Expression: "cron(0 12 * * ? *)",
		Input:      json.RawMessage(`{"q":"daily"}`),
		Owner:      "owner-1",
		CreatedAt:  at(0),
	}
}

func normWorkflow(w contracts.Workflow) contracts.Workflow {
	w.CreatedAt = w.CreatedAt.UTC()
	return w
}

func normRun(r contracts.WorkflowRun) contracts.WorkflowRun {
	r.ScheduledAt, r.StartedAt, r.UpdatedAt = r.ScheduledAt.UTC(), r.StartedAt.UTC(), r.UpdatedAt.UTC()
	return r
}

func normNode(n contracts.WorkflowNode) contracts.WorkflowNode {
	n.CreatedAt = n.CreatedAt.UTC()
	return n
}

func normSchedule(s contracts.Schedule) contracts.Schedule {
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s
}

// equal reports got ≠ want (after norm), showing where their JSON first
// differs so a failure on a 300 KiB record stays readable.
func equal[T any](t *testing.T, what string, got, want T, norm func(T) T) {
	t.Helper()
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: %s", what, diff(g, w))
	}
}

func diff(got, want any) string {
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	if i == len(g) && i == len(w) {
		return fmt.Sprintf("values differ but encode alike:\n got %+v\nwant %+v", got, want)
	}
	window := func(b []byte) string {
		lo, hi := max(0, i-120), min(len(b), i+120)
		return "…" + string(b[lo:hi]) + "…"
	}
	return fmt.Sprintf("JSON differs at byte %d (of %d got, %d want):\n got %s\nwant %s",
		i, len(g), len(w), window(g), window(w))
}

func equalRun(t *testing.T, what string, got, want contracts.WorkflowRun) {
	t.Helper()
	equal(t, what, got, want, normRun)
}

func equalNode(t *testing.T, what string, got, want contracts.WorkflowNode) {
	t.Helper()
	equal(t, what, got, want, normNode)
}

func runIDs(runs []contracts.WorkflowRun) []string {
	out := []string{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func nodeIDs(nodes []contracts.WorkflowNode) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}

// raceCreates runs create(i) for 8 racers released at once and checks that
// exactly one of them created the record; it returns what each racer got.
func raceCreates[T any](t *testing.T, what string, create func(i int) (T, bool, error)) []T {
	t.Helper()
	const n = 8
	var wg sync.WaitGroup
	results, created := make([]T, n), make([]bool, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			got, c, err := create(i)
			if err != nil {
				t.Errorf("racing %s %d: %v", what, i, err)
				return
			}
			results[i], created[i] = got, c
		})
	}
	close(start)
	wg.Wait()
	winners := 0
	for _, c := range created {
		if c {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d racing %s calls created the record, want exactly 1", winners, what)
	}
	return results
}
