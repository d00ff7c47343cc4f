package workflowtest

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// testListUnfinishedRuns: RUNNING runs are listed oldest UpdatedAt first;
// a run created or updated to SUCCEEDED/FAILED is not; touching a run
// moves it to the back; limit is respected.
func testListUnfinishedRuns(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	stored := map[string]contracts.WorkflowRun{}
	create := func(id string, sec int, status contracts.RunStatus) contracts.WorkflowRun {
		t.Helper()
		r := newRun(p+"-"+id, p+"-wf", at(sec))
		r.Status = status
		got, _, err := s.CreateRun(ctx, r)
		if err != nil {
			t.Fatalf("CreateRun(%s): %v", r.ID, err)
		}
		stored[got.ID] = got
		return got
	}
	update := func(r contracts.WorkflowRun, status contracts.RunStatus, sec int) {
		t.Helper()
		next := r
		next.Status, next.UpdatedAt = status, at(sec)
		next.Evaluations++
		got, err := s.UpdateRun(ctx, next, r.Version)
		if err != nil {
			t.Fatalf("UpdateRun(%s → %s): %v", r.ID, status, err)
		}
		stored[got.ID] = got
	}
	a := create("a", 30, contracts.RunRunning)
	b := create("b", 10, contracts.RunRunning)
	create("c", 20, contracts.RunRunning)
	create("done", 5, contracts.RunSucceeded)
	create("failed", 6, contracts.RunFailed)
	d := create("d", 1, contracts.RunRunning)

	list := func(limit int) []contracts.WorkflowRun {
		t.Helper()
		got, err := s.ListUnfinishedRuns(ctx, limit)
		if err != nil {
			t.Fatalf("ListUnfinishedRuns(%d): %v", limit, err)
		}
		for i, r := range got {
			if r.Status != contracts.RunRunning {
				t.Errorf("ListUnfinishedRuns(%d) returned run %s in status %s", limit, r.ID, r.Status)
			}
			if i > 0 && r.UpdatedAt.Before(got[i-1].UpdatedAt) {
				t.Errorf("ListUnfinishedRuns(%d): run %s (updated %v) after %s (updated %v): want oldest UpdatedAt first",
					limit, r.ID, r.UpdatedAt, got[i-1].ID, got[i-1].UpdatedAt)
			}
		}
		return got
	}
	mine := func(runs []contracts.WorkflowRun) []string {
		t.Helper()
		out := []string{}
		for _, r := range runs {
			if strings.HasPrefix(r.ID, p) {
				out = append(out, r.ID)
				equalRun(t, "listed run "+r.ID, r, stored[r.ID])
			}
		}
		return out
	}
	if got, want := mine(list(0)), []string{p + "-d", p + "-b", p + "-c", p + "-a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListUnfinishedRuns = %v, want %v (RUNNING only, oldest UpdatedAt first)", got, want)
	}

	// Ending a run removes it; touching one moves it to the back.
	update(d, contracts.RunSucceeded, 40)
	update(a, contracts.RunFailed, 41)
	update(b, contracts.RunRunning, 50)
	if got, want := mine(list(100000)), []string{p + "-c", p + "-b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListUnfinishedRuns after updates = %v, want %v", got, want)
	}

	for _, limit := range []int{1, 2} {
		if got := list(limit); len(got) != limit {
			t.Errorf("ListUnfinishedRuns(%d) returned %d runs, want %d", limit, len(got), limit)
		}
	}
}
