package workflowtest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A list of one owner's workflows holds all of them, newest id first, and
// never another owner's; its limit counts matching workflows; "" lists
// every owner's. One workflow has a script big enough for a claim check
// (its owner must still be found).
func testListWorkflows(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	a, b := p+"-owner-a", p+"-owner-b"
	var wantA, wantB, wantAll []string
	for i := range 7 {
		wf := newWorkflow(fmt.Sprintf("%s-%02d", p, i))
		wf.Owner = b
		if i%3 == 1 {
			wf.Owner = a
		}
		if i == 4 {
			wf.Script = "# " + strings.Repeat("s", 300<<10) + "\nresult = 1\n"
		}
		if _, err := s.CreateWorkflow(ctx, wf); err != nil {
			t.Fatalf("CreateWorkflow: %v", err)
		}
		if wf.Owner == a {
			wantA = append([]string{wf.ID}, wantA...)
		} else {
			wantB = append([]string{wf.ID}, wantB...)
		}
		wantAll = append([]string{wf.ID}, wantAll...)
	}
	ids := func(list []contracts.Workflow, owner string) []string {
		t.Helper()
		var out []string
		for _, x := range list {
			if owner != "" && x.Owner != owner {
				t.Fatalf("ListWorkflows(%q) holds %s of %q", owner, x.ID, x.Owner)
			}
			if strings.HasPrefix(x.ID, p) {
				out = append(out, x.ID)
			}
		}
		return out
	}
	for _, c := range []struct {
		owner string
		want  []string
	}{{a, wantA}, {b, wantB}, {"", wantAll}} {
		all, err := s.ListWorkflows(ctx, c.owner, 0)
		if err != nil {
			t.Fatalf("ListWorkflows(%q): %v", c.owner, err)
		}
		if got := ids(all, c.owner); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ListWorkflows(%q) = %v, want %v", c.owner, got, c.want)
		}
		if c.owner == "" {
			continue // other tests' workflows are newer than these
		}
		two, err := s.ListWorkflows(ctx, c.owner, 2)
		if err != nil {
			t.Fatalf("ListWorkflows(%q, 2): %v", c.owner, err)
		}
		if got := ids(two, c.owner); !reflect.DeepEqual(got, c.want[:2]) {
			t.Errorf("ListWorkflows(%q, 2) = %v, want %v", c.owner, got, c.want[:2])
		}
	}
	all, err := s.ListWorkflows(ctx, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range all {
		if x.ID == p+"-04" && !strings.HasSuffix(x.Script, "result = 1\n") {
			t.Errorf("ListWorkflows: the big workflow's script came back cut (%d bytes)", len(x.Script))
		}
	}
	none, err := s.ListWorkflows(ctx, p+"-nobody", 5)
	if err != nil || len(none) != 0 {
		t.Errorf("ListWorkflows(an owner of nothing) = %d workflows, %v; want none", len(none), err)
	}
}
