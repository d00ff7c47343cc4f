package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// RunTranscript checks a TranscriptStore: create-if-absent PutNode, GetNode,
// and Path from root to leaf across branches.
func RunTranscript(t *testing.T, newStore func(t *testing.T) contracts.TranscriptStore) {
	run(t, newStore, []subtest[contracts.TranscriptStore]{
		{"PutGet", testNodePutGet},
		{"PutExisting", testNodePutExisting},
		{"CreateNode", testCreateNode},
		{"GetMissing", testNodeGetMissing},
		{"Path", testPath},
		{"PathMissing", testPathMissing},
		{"PathCycle", testPathCycle},
	})
}

func node(id, parent string, role contracts.Role, text string) contracts.Node {
	return contracts.Node{
		ID: id, Parent: parent, SessionID: "sess", SubmissionID: "sub", Role: role,
		Blocks:    []contracts.Block{{Type: contracts.BlockText, Text: text}},
		CreatedAt: base,
	}
}

func equalNodes(t *testing.T, what string, got, want []contracts.Node) {
	t.Helper()
	norm := func(ns []contracts.Node) []contracts.Node {
		out := make([]contracts.Node, len(ns))
		for i, n := range ns {
			n.CreatedAt = n.CreatedAt.UTC()
			out[i] = n
		}
		return out
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func testNodePutGet(t *testing.T, s contracts.TranscriptStore) {
	ctx := context.Background()
	p := uniq(t)
	n := node(p+"-root", "", contracts.RoleUser, "hi")
	a := contracts.Node{
		ID: p + "-a", Parent: n.ID, SessionID: "sess", SubmissionID: "sub", Role: contracts.RoleAssistant,
		Blocks: []contracts.Block{
			{Type: contracts.BlockText, Text: "running"},
			{Type: contracts.BlockToolUse, ToolCall: &contracts.ToolCall{ID: "c1", Name: "bash", Input: []byte(`{"cmd":"ls"}`)}},
		},
		CreatedAt: base.Add(time.Nanosecond),
	}
	tr := contracts.Node{
		ID: p + "-t", Parent: a.ID, SessionID: "sess", SubmissionID: "sub", Role: contracts.RoleTool,
		Blocks: []contracts.Block{
			{Type: contracts.BlockToolResult, ToolResult: &contracts.ToolResult{CallID: "c1", Content: "x", IsError: true}},
		},
		CreatedAt: base.Add(time.Second),
	}
	for _, want := range []contracts.Node{n, a, tr} {
		if err := s.PutNode(ctx, want); err != nil {
			t.Fatalf("PutNode(%s): %v", want.ID, err)
		}
		got, err := s.GetNode(ctx, want.ID)
		if err != nil {
			t.Fatalf("GetNode(%s): %v", want.ID, err)
		}
		equalNodes(t, "GetNode", []contracts.Node{got}, []contracts.Node{want})
		if !got.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt)
		}
	}
}

func testNodePutExisting(t *testing.T, s contracts.TranscriptStore) {
	ctx := context.Background()
	first := node(uniq(t), "", contracts.RoleUser, "first")
	if err := s.PutNode(ctx, first); err != nil {
		t.Fatalf("PutNode: %v", err)
	}
	second := node(first.ID, "", contracts.RoleUser, "second")
	if err := s.PutNode(ctx, second); err != nil {
		t.Fatalf("PutNode(existing id): err = %v, want nil (no-op)", err)
	}
	got, err := s.GetNode(ctx, first.ID)
	if err != nil {
		t.Fatalf("GetNode: %v", err)
	}
	equalNodes(t, "after re-put", []contracts.Node{got}, []contracts.Node{first})
}

// testCreateNode checks the optional NodeCreator: created is true for
// the write that stored the node and false for a later one of the same id,
// which leaves it as it was.
func testCreateNode(t *testing.T, s contracts.TranscriptStore) {
	nc, ok := s.(contracts.NodeCreator)
	if !ok {
		t.Log("the store has no NodeCreator (an optional capability): nothing to check")
		return
	}
	ctx := context.Background()
	first := node(uniq(t), "", contracts.RoleUser, "first")
	if created, err := nc.CreateNode(ctx, first); err != nil || !created {
		t.Fatalf("CreateNode(new) = %v, %v; want true, nil", created, err)
	}
	if created, err := nc.CreateNode(ctx, node(first.ID, "", contracts.RoleUser, "second")); err != nil || created {
		t.Fatalf("CreateNode(existing id) = %v, %v; want false, nil", created, err)
	}
	got, err := s.GetNode(ctx, first.ID)
	if err != nil {
		t.Fatalf("GetNode: %v", err)
	}
	equalNodes(t, "after a second create", []contracts.Node{got}, []contracts.Node{first})
}

func testNodeGetMissing(t *testing.T, s contracts.TranscriptStore) {
	if _, err := s.GetNode(context.Background(), uniq(t)); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetNode(missing): err = %v, want ErrNotFound", err)
	}
}

func testPath(t *testing.T, s contracts.TranscriptStore) {
	ctx := context.Background()
	p := uniq(t)
	root := node(p+"-root", "", contracts.RoleUser, "q")
	a := node(p+"-a", root.ID, contracts.RoleAssistant, "a")
	b := node(p+"-b", a.ID, contracts.RoleUser, "b")
	c := node(p+"-c", b.ID, contracts.RoleAssistant, "c")
	fork := node(p+"-fork", a.ID, contracts.RoleUser, "fork") // a branch off a
	for _, n := range []contracts.Node{c, fork, b, a, root} { // any order
		if err := s.PutNode(ctx, n); err != nil {
			t.Fatalf("PutNode(%s): %v", n.ID, err)
		}
	}
	tests := []struct {
		leaf string
		want []contracts.Node
	}{
		{root.ID, []contracts.Node{root}},
		{b.ID, []contracts.Node{root, a, b}},
		{c.ID, []contracts.Node{root, a, b, c}},
		{fork.ID, []contracts.Node{root, a, fork}},
	}
	for _, tc := range tests {
		got, err := s.Path(ctx, tc.leaf)
		if err != nil {
			t.Errorf("Path(%s): %v", tc.leaf, err)
			continue
		}
		equalNodes(t, "Path("+tc.leaf+")", got, tc.want)
	}
}

func testPathMissing(t *testing.T, s contracts.TranscriptStore) {
	ctx := context.Background()
	p := uniq(t)
	if _, err := s.Path(ctx, p+"-nothing"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Path(missing leaf): err = %v, want ErrNotFound", err)
	}
	orphan := node(p+"-orphan", p+"-gone", contracts.RoleUser, "x")
	if err := s.PutNode(ctx, orphan); err != nil {
		t.Fatalf("PutNode: %v", err)
	}
	if _, err := s.Path(ctx, orphan.ID); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Path(leaf with missing parent): err = %v, want ErrNotFound", err)
	}
}

func testPathCycle(t *testing.T, s contracts.TranscriptStore) {
	ctx := context.Background()
	p := uniq(t)
	x := node(p+"-x", p+"-y", contracts.RoleUser, "x")
	y := node(p+"-y", p+"-x", contracts.RoleAssistant, "y")
	for _, n := range []contracts.Node{x, y} {
		if err := s.PutNode(ctx, n); err != nil {
			t.Fatalf("PutNode(%s): %v", n.ID, err)
		}
	}
	if path, err := s.Path(ctx, x.ID); err == nil {
		t.Errorf("Path(cyclic chain) = %d nodes, nil error; want an error", len(path))
	}
}
