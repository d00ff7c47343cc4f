package workflowtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// listNodes returns the run's nodes, failing the test on error.
func listNodes(t *testing.T, s contracts.WorkflowStore, runID string) []contracts.WorkflowNode {
	t.Helper()
	nodes, err := s.ListNodes(context.Background(), runID)
	if err != nil {
		t.Fatalf("ListNodes(%s): %v", runID, err)
	}
	return nodes
}

func testNodePut(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	run := uniq(t)
	ro := true
	want := newNode(run, run+"-n", 0)
	want.Key = "explicit"
	want.Spec = contracts.NodeSpec{
		Prompt: "summarise\nthe \"input\" ☃",
		Model:  "scripted:demo",
		System: "be brief",
		Tools:  []contracts.ToolConfig{{Name: "bash", Config: json.RawMessage(`{"timeout":5}`), ReadOnly: &ro}},
		Limits: contracts.Limits{MaxSteps: 4},
	}
	got, created, err := s.PutNode(ctx, want)
	if err != nil {
		t.Fatalf("PutNode: %v", err)
	}
	if !created {
		t.Errorf("PutNode: created = false, want true")
	}
	equalNode(t, "PutNode returned", got, want)
	nodes := listNodes(t, s, run)
	if len(nodes) != 1 {
		t.Fatalf("ListNodes = %v, want one node", nodeIDs(nodes))
	}
	equalNode(t, "ListNodes", nodes[0], want)
	if !nodes[0].CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("CreatedAt = %v, want %v", nodes[0].CreatedAt, want.CreatedAt)
	}
}

func testNodePutExisting(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	run := uniq(t)
	first := newNode(run, run+"-n", 3)
	if _, created, err := s.PutNode(ctx, first); err != nil || !created {
		t.Fatalf("PutNode: created=%v err=%v", created, err)
	}
	for _, seq := range []int{3, 4} { // the same node again, and its id at another position
		dup := newNode(run, run+"-n", seq)
		dup.Spec.Prompt, dup.SessionID = "something else", "ses-other"
		got, created, err := s.PutNode(ctx, dup)
		if err != nil {
			t.Fatalf("duplicate PutNode(seq %d): %v", seq, err)
		}
		if created {
			t.Errorf("duplicate PutNode(seq %d): created = true, want false", seq)
		}
		equalNode(t, fmt.Sprintf("duplicate PutNode(seq %d) returned", seq), got, first)
	}
	nodes := listNodes(t, s, run)
	if len(nodes) != 1 {
		t.Fatalf("ListNodes = %v, want the one node", nodeIDs(nodes))
	}
	equalNode(t, "after duplicate puts", nodes[0], first)

	// A duplicate after the result is set returns the node with its result.
	res := contracts.NodeResult{OK: true, Output: "42"}
	if err := s.SetNodeResult(ctx, run, first.ID, res); err != nil {
		t.Fatalf("SetNodeResult: %v", err)
	}
	got, created, err := s.PutNode(ctx, newNode(run, run+"-n", 3))
	if err != nil || created {
		t.Fatalf("PutNode after result: created=%v err=%v, want the existing node", created, err)
	}
	first.Result = &res
	equalNode(t, "PutNode after result returned", got, first)
}

func testNodeResultFirstWins(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	run := uniq(t)
	a, b := newNode(run, run+"-a", 0), newNode(run, run+"-b", 1)
	for _, n := range []contracts.WorkflowNode{a, b} {
		if _, _, err := s.PutNode(ctx, n); err != nil {
			t.Fatalf("PutNode(%s): %v", n.ID, err)
		}
	}
	first := contracts.NodeResult{OK: false, Error: "model refused"}
	second := contracts.NodeResult{OK: true, Output: "late success"}
	for _, r := range []contracts.NodeResult{first, second} {
		if err := s.SetNodeResult(ctx, run, a.ID, r); err != nil {
			t.Fatalf("SetNodeResult(%+v): %v", r, err)
		}
	}
	a.Result = &first
	nodes := listNodes(t, s, run)
	if got, want := nodeIDs(nodes), []string{a.ID, b.ID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ListNodes = %v, want %v", got, want)
	}
	equalNode(t, "node with result", nodes[0], a)
	equalNode(t, "node without result", nodes[1], b)
}

func testNodeResultMissing(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	run := uniq(t)
	res := contracts.NodeResult{OK: true, Output: "x"}
	if err := s.SetNodeResult(ctx, run, run+"-n", res); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("SetNodeResult(missing run): err = %v, want ErrNotFound", err)
	}
	n := newNode(run, run+"-n", 0)
	if _, _, err := s.PutNode(ctx, n); err != nil {
		t.Fatalf("PutNode: %v", err)
	}
	if err := s.SetNodeResult(ctx, run, run+"-other", res); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("SetNodeResult(missing node): err = %v, want ErrNotFound", err)
	}
	nodes := listNodes(t, s, run)
	if len(nodes) != 1 {
		t.Fatalf("ListNodes = %v, want only %s", nodeIDs(nodes), n.ID)
	}
	equalNode(t, "untouched node", nodes[0], n)
}

func testNodeBig(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	run := uniq(t)
	n := newNode(run, run+"-n", 0)
	n.Spec.Prompt = strings.Repeat("prömpt ", 200<<10/8)
	got, created, err := s.PutNode(ctx, n)
	if err != nil || !created {
		t.Fatalf("PutNode(200 KiB prompt): created=%v err=%v", created, err)
	}
	equalNode(t, "PutNode(200 KiB prompt) returned", got, n)
	res := contracts.NodeResult{OK: true, Output: strings.Repeat("output ", 150<<10/7)}
	if err := s.SetNodeResult(ctx, run, n.ID, res); err != nil {
		t.Fatalf("SetNodeResult(150 KiB output): %v", err)
	}
	n.Result = &res
	nodes := listNodes(t, s, run)
	if len(nodes) != 1 {
		t.Fatalf("ListNodes = %v, want one node", nodeIDs(nodes))
	}
	equalNode(t, "ListNodes(200 KiB prompt, 150 KiB output)", nodes[0], n)
	got, _, err = s.PutNode(ctx, newNode(run, run+"-n", 0))
	if err != nil {
		t.Fatalf("duplicate PutNode: %v", err)
	}
	equalNode(t, "duplicate PutNode(big) returned", got, n)
}

func testListNodesOrder(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	run := uniq(t)
	// Ids sort differently from seqs; puts arrive out of order.
	byID := map[string]contracts.WorkflowNode{}
	for _, n := range []contracts.WorkflowNode{newNode(run, run+"-m", 2), newNode(run, run+"-z", 0), newNode(run, run+"-a", 1)} {
		if _, _, err := s.PutNode(ctx, n); err != nil {
			t.Fatalf("PutNode(%s): %v", n.ID, err)
		}
		byID[n.ID] = n
	}
	if _, _, err := s.PutNode(ctx, newNode(run+"-other", run+"-x", 0)); err != nil {
		t.Fatalf("PutNode(other run): %v", err)
	}
	res := contracts.NodeResult{OK: true, Output: "a done"}
	if err := s.SetNodeResult(ctx, run, run+"-a", res); err != nil {
		t.Fatalf("SetNodeResult: %v", err)
	}
	a := byID[run+"-a"]
	a.Result = &res
	byID[a.ID] = a

	nodes := listNodes(t, s, run)
	if got, want := nodeIDs(nodes), []string{run + "-z", run + "-a", run + "-m"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ListNodes = %v, want %v (Seq order)", got, want)
	}
	for _, n := range nodes {
		equalNode(t, "listed node "+n.ID, n, byID[n.ID])
	}
	if none := listNodes(t, s, run+"-nothing"); len(none) != 0 {
		t.Errorf("ListNodes(unknown run) = %v, want empty", nodeIDs(none))
	}
}

func testListNodesMany(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	run := uniq(t)
	const n = 250
	want := make([]contracts.WorkflowNode, n)
	for i := range n {
		seq := i * 7 % n // every seq once, out of order
		node := newNode(run, fmt.Sprintf("%s-%03d", run, n-seq), seq)
		if _, _, err := s.PutNode(ctx, node); err != nil {
			t.Fatalf("PutNode(seq %d): %v", seq, err)
		}
		if seq%10 == 0 {
			res := contracts.NodeResult{OK: true, Output: fmt.Sprint(seq)}
			if err := s.SetNodeResult(ctx, run, node.ID, res); err != nil {
				t.Fatalf("SetNodeResult(seq %d): %v", seq, err)
			}
			node.Result = &res
		}
		want[seq] = node
	}
	nodes := listNodes(t, s, run)
	if len(nodes) != n {
		t.Fatalf("ListNodes returned %d nodes, want %d", len(nodes), n)
	}
	for i := range nodes {
		equalNode(t, fmt.Sprintf("ListNodes[%d]", i), nodes[i], want[i])
	}
}

func testRacingNodePuts(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	run := uniq(t)
	results := raceCreates(t, "PutNode", func(i int) (contracts.WorkflowNode, bool, error) {
		node := newNode(run, run+"-n", 0)
		node.Spec.Prompt = fmt.Sprintf("racer %d", i)
		return s.PutNode(ctx, node)
	})
	nodes := listNodes(t, s, run)
	if len(nodes) != 1 {
		t.Fatalf("ListNodes = %v, want one node", nodeIDs(nodes))
	}
	for i, r := range results {
		equalNode(t, fmt.Sprintf("racer %d got", i), r, nodes[0])
	}
}
