package workflowtest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Run checks store against the WorkflowStore contract. newStore is called
// once per subtest; it may return a fresh store or a shared one.
func Run(t *testing.T, newStore func(t *testing.T) contracts.WorkflowStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s contracts.WorkflowStore)
	}{
		{"WorkflowCreateGet", testWorkflowCreateGet},
		{"WorkflowCreateExisting", testWorkflowCreateExisting},
		{"WorkflowGetMissing", testWorkflowGetMissing},
		{"ListWorkflows", testListWorkflows},
		{"ScheduleCreateGet", testScheduleCreateGet},
		{"ScheduleCreateExisting", testScheduleCreateExisting},
		{"ScheduleGetMissing", testScheduleGetMissing},
		{"ListSchedules", testListSchedules},
		{"ScheduleUpdate", testScheduleUpdate},
		{"ScheduleUpdateMissing", testScheduleUpdateMissing},
		{"ScheduleDelete", testScheduleDelete},
		{"ScheduleUpdateBig", testScheduleUpdateBig},
		{"RacingScheduleUpdatesAndDelete", testRacingScheduleUpdatesAndDelete},
		{"RunCreateGet", testRunCreateGet},
		{"RunCreateExisting", testRunCreateExisting},
		{"RunGetMissing", testRunGetMissing},
		{"RunUpdate", testRunUpdate},
		{"RunBig", testRunBig},
		{"ListRuns", testListRuns},
		{"ListUnfinishedRuns", testListUnfinishedRuns},
		{"RacingRunCreates", testRacingRunCreates},
		{"RacingRunUpdates", testRacingRunUpdates},
		{"NodePut", testNodePut},
		{"NodePutExisting", testNodePutExisting},
		{"NodeResultFirstWins", testNodeResultFirstWins},
		{"NodeResultMissing", testNodeResultMissing},
		{"NodeBig", testNodeBig},
		{"ListNodesOrder", testListNodesOrder},
		{"ListNodesMany", testListNodesMany},
		{"RacingNodePuts", testRacingNodePuts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

func testWorkflowCreateGet(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	want := newWorkflow(uniq(t))
	got, err := s.CreateWorkflow(ctx, want)
	if err != nil {
		t.Fatalf("CreateWorkflow: %v", err)
	}
	equal(t, "CreateWorkflow returned", got, want, normWorkflow)
	read, err := s.GetWorkflow(ctx, want.ID)
	if err != nil {
		t.Fatalf("GetWorkflow: %v", err)
	}
	equal(t, "GetWorkflow", read, want, normWorkflow)
	if !read.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("CreatedAt = %v, want %v", read.CreatedAt, want.CreatedAt)
	}
}

func testWorkflowCreateExisting(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	first := newWorkflow(uniq(t))
	if _, err := s.CreateWorkflow(ctx, first); err != nil {
		t.Fatalf("CreateWorkflow: %v", err)
	}
	second := first
	second.Name, second.Script = "other", "return 2\n"
	if _, err := s.CreateWorkflow(ctx, second); !errors.Is(err, contracts.ErrExists) {
		t.Fatalf("second CreateWorkflow: err = %v, want ErrExists", err)
	}
	got, err := s.GetWorkflow(ctx, first.ID)
	if err != nil {
		t.Fatalf("GetWorkflow: %v", err)
	}
	equal(t, "after duplicate create", got, first, normWorkflow)
}

func testWorkflowGetMissing(t *testing.T, s contracts.WorkflowStore) {
	if _, err := s.GetWorkflow(context.Background(), uniq(t)); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetWorkflow(missing): err = %v, want ErrNotFound", err)
	}
}

func testScheduleCreateGet(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	want := newSchedule(p, p+"-wf")
	got, err := s.CreateSchedule(ctx, want)
	if err != nil {
		t.Fatalf("CreateSchedule: %v", err)
	}
	equal(t, "CreateSchedule returned", got, want, normSchedule)
	read, err := s.GetSchedule(ctx, want.ID)
	if err != nil {
		t.Fatalf("GetSchedule: %v", err)
	}
	equal(t, "GetSchedule", read, want, normSchedule)
	if string(read.Input) != string(want.Input) {
		t.Errorf("Input = %s, want %s byte for byte", read.Input, want.Input)
	}
}

func testScheduleCreateExisting(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	first := newSchedule(p, p+"-wf")
	if _, err := s.CreateSchedule(ctx, first); err != nil {
		t.Fatalf("CreateSchedule: %v", err)
	}
	second := first
	second.Expression = "rate(5 minutes)"
	if _, err := s.CreateSchedule(ctx, second); !errors.Is(err, contracts.ErrExists) {
		t.Fatalf("second CreateSchedule: err = %v, want ErrExists", err)
	}
	got, err := s.GetSchedule(ctx, first.ID)
	if err != nil {
		t.Fatalf("GetSchedule: %v", err)
	}
	equal(t, "after duplicate create", got, first, normSchedule)
}

func testScheduleGetMissing(t *testing.T, s contracts.WorkflowStore) {
	if _, err := s.GetSchedule(context.Background(), uniq(t)); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetSchedule(missing): err = %v, want ErrNotFound", err)
	}
}

func testListSchedules(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	want := map[string]contracts.Schedule{}
	for _, suffix := range []string{"c", "a", "b"} {
		sc := newSchedule(p+"-"+suffix, p+"-wf")
		sc.Expression = "rate(" + suffix + ")"
		if _, err := s.CreateSchedule(ctx, sc); err != nil {
			t.Fatalf("CreateSchedule: %v", err)
		}
		want[sc.ID] = sc
	}
	all, err := s.ListSchedules(ctx)
	if err != nil {
		t.Fatalf("ListSchedules: %v", err)
	}
	var got []string
	for _, sc := range all {
		if !strings.HasPrefix(sc.ID, p) {
			continue
		}
		got = append(got, sc.ID)
		equal(t, "listed schedule "+sc.ID, sc, want[sc.ID], normSchedule)
	}
	slices.Sort(got)
	if w := []string{p + "-a", p + "-b", p + "-c"}; !reflect.DeepEqual(got, w) {
		t.Errorf("ListSchedules: got %v, want %v", got, w)
	}
}
