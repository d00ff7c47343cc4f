package workflowtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

func testRunCreateGet(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	want := newRun(p, p+"-wf", at(1))
	want.Version = 42 // ignored: a created run starts at version 1
	want.Result = json.RawMessage(`{"ok":true,"items":["a","b"]}`)
	want.Error = "none yet"
	want.ScheduleID = p + "-sched"
	want.ScheduledAt = at(-60)
	want.Parent = &contracts.RunParent{SessionID: "ses-1", SubmissionID: "sub-1", Step: 2, CallID: "call-1"}
	want.Evaluations = 3
	want.UpdatedAt = at(2)

	got, created, err := s.CreateRun(ctx, want)
	if err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	if !created {
		t.Errorf("CreateRun: created = false, want true")
	}
	want.Version = 1
	equalRun(t, "CreateRun returned", got, want)
	read, err := s.GetRun(ctx, want.ID)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	equalRun(t, "GetRun", read, want)
	if string(read.Input) != string(want.Input) || string(read.Result) != string(want.Result) {
		t.Errorf("JSON changed: input %s result %s, want %s and %s", read.Input, read.Result, want.Input, want.Result)
	}
	if !read.StartedAt.Equal(want.StartedAt) || !read.ScheduledAt.Equal(want.ScheduledAt) || !read.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("timestamps changed: got %v/%v/%v", read.StartedAt, read.ScheduledAt, read.UpdatedAt)
	}
}

func testRunCreateExisting(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	first, created, err := s.CreateRun(ctx, newRun(p, p+"-wf", at(1)))
	if err != nil || !created {
		t.Fatalf("CreateRun: created=%v err=%v", created, err)
	}
	dup := newRun(p, p+"-other", at(5))
	dup.Script, dup.Input, dup.Status = "return 2\n", json.RawMessage(`{"q":"other"}`), contracts.RunFailed
	got, created, err := s.CreateRun(ctx, dup)
	if err != nil {
		t.Fatalf("duplicate CreateRun: %v", err)
	}
	if created {
		t.Errorf("duplicate CreateRun: created = true, want false")
	}
	equalRun(t, "duplicate CreateRun returned", got, first)
	read, err := s.GetRun(ctx, p)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	equalRun(t, "after duplicate create", read, first)
	if runs, err := s.ListRuns(ctx, p+"-other", 100); err != nil || len(runs) != 0 {
		t.Errorf("ListRuns(duplicate's workflow) = %v, %v; want empty", runIDs(runs), err)
	}

	// A duplicate after an update returns the run as it is now.
	next := first
	next.Evaluations, next.UpdatedAt = 1, at(9)
	updated, err := s.UpdateRun(ctx, next, first.Version)
	if err != nil {
		t.Fatalf("UpdateRun: %v", err)
	}
	got, created, err = s.CreateRun(ctx, dup)
	if err != nil || created {
		t.Fatalf("CreateRun after update: created=%v err=%v, want the existing run", created, err)
	}
	equalRun(t, "CreateRun after update returned", got, updated)
}

func testRunGetMissing(t *testing.T, s contracts.WorkflowStore) {
	if _, err := s.GetRun(context.Background(), uniq(t)); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetRun(missing): err = %v, want ErrNotFound", err)
	}
}

func testRunUpdate(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	created, _, err := s.CreateRun(ctx, newRun(p, p+"-wf", at(1)))
	if err != nil {
		t.Fatalf("CreateRun: %v", err)
	}

	v2 := created
	v2.Evaluations, v2.UpdatedAt = 1, at(2)
	got, err := s.UpdateRun(ctx, v2, 1)
	if err != nil {
		t.Fatalf("UpdateRun(expected 1): %v", err)
	}
	v2.Version = 2
	equalRun(t, "UpdateRun returned", got, v2)

	v3 := got
	v3.Status, v3.Result, v3.Evaluations, v3.UpdatedAt = contracts.RunSucceeded, json.RawMessage(`["done",1]`), 2, at(3)
	got, err = s.UpdateRun(ctx, v3, 2)
	if err != nil {
		t.Fatalf("UpdateRun(expected 2): %v", err)
	}
	v3.Version = 3
	equalRun(t, "second UpdateRun returned", got, v3)

	for _, stale := range []int64{1, 2, 4} {
		lose := created
		lose.Status, lose.Error = contracts.RunFailed, "stale writer"
		if _, err := s.UpdateRun(ctx, lose, stale); !errors.Is(err, contracts.ErrConflict) {
			t.Errorf("UpdateRun(expected %d, stored 3): err = %v, want ErrConflict", stale, err)
		}
	}
	read, err := s.GetRun(ctx, p)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	equalRun(t, "after stale updates", read, v3)

	missing := newRun(p+"-missing", p+"-wf", at(1))
	if _, err := s.UpdateRun(ctx, missing, 1); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("UpdateRun(missing): err = %v, want ErrNotFound", err)
	}
}

func testRunBig(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	run := newRun(p, p+"-wf", at(1))
	run.Input = bigJSON(300 << 10)
	created, ok, err := s.CreateRun(ctx, run)
	if err != nil || !ok {
		t.Fatalf("CreateRun(300 KiB input): created=%v err=%v", ok, err)
	}
	read, err := s.GetRun(ctx, p)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	equalRun(t, "GetRun(300 KiB input)", read, created)

	done := read
	done.Status, done.Result, done.UpdatedAt = contracts.RunSucceeded, bigJSON(310<<10), at(2)
	if _, err := s.UpdateRun(ctx, done, read.Version); err != nil {
		t.Fatalf("UpdateRun(300 KiB result): %v", err)
	}
	done.Version = read.Version + 1
	read, err = s.GetRun(ctx, p)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	equalRun(t, "GetRun(300 KiB input and result)", read, done)
	runs, err := s.ListRuns(ctx, run.WorkflowID, 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("ListRuns = %d runs, %v; want 1", len(runs), err)
	}
	equalRun(t, "ListRuns(300 KiB input and result)", runs[0], done)
}

func testListRuns(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	wf := p + "-wf"
	runs := map[string]contracts.WorkflowRun{}
	for _, sec := range []int{1, 3, 2} {
		r, _, err := s.CreateRun(ctx, newRun(fmt.Sprintf("%s-%d", p, sec), wf, at(sec)))
		if err != nil {
			t.Fatalf("CreateRun: %v", err)
		}
		runs[r.ID] = r
	}
	if _, _, err := s.CreateRun(ctx, newRun(p+"-9", p+"-other", at(9))); err != nil {
		t.Fatalf("CreateRun(other workflow): %v", err)
	}
	// An update shows in the list; StartedAt, not UpdatedAt, orders it.
	r1 := runs[p+"-1"]
	r1.Status, r1.UpdatedAt = contracts.RunFailed, at(50)
	r1, err := s.UpdateRun(ctx, r1, r1.Version)
	if err != nil {
		t.Fatalf("UpdateRun: %v", err)
	}
	runs[r1.ID] = r1

	all, err := s.ListRuns(ctx, wf, 100)
	if err != nil {
		t.Fatalf("ListRuns: %v", err)
	}
	if got, want := runIDs(all), []string{p + "-3", p + "-2", p + "-1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ListRuns = %v, want %v (newest StartedAt first)", got, want)
	}
	for _, r := range all {
		equalRun(t, "listed run "+r.ID, r, runs[r.ID])
	}
	two, err := s.ListRuns(ctx, wf, 2)
	if err != nil {
		t.Fatalf("ListRuns(2): %v", err)
	}
	if got, want := runIDs(two), []string{p + "-3", p + "-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListRuns(2) = %v, want %v", got, want)
	}
	none, err := s.ListRuns(ctx, p+"-nothing", 100)
	if err != nil || len(none) != 0 {
		t.Errorf("ListRuns(unknown workflow) = %v, %v; want empty", runIDs(none), err)
	}
}

func testRacingRunCreates(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	results := raceCreates(t, "CreateRun", func(i int) (contracts.WorkflowRun, bool, error) {
		r := newRun(p, p+"-wf", at(i))
		r.Input = json.RawMessage(fmt.Sprintf(`{"racer":%d}`, i))
		return s.CreateRun(ctx, r)
	})
	stored, err := s.GetRun(ctx, p)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	for i, r := range results {
		equalRun(t, fmt.Sprintf("racer %d got", i), r, stored)
	}
}

func testRacingRunUpdates(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	created, _, err := s.CreateRun(ctx, newRun(p, p+"-wf", at(0)))
	if err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	const n = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []int
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			r := created
			r.Evaluations = 100 + i
			<-start
			_, err := s.UpdateRun(ctx, r, created.Version)
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, r.Evaluations)
				mu.Unlock()
			case !errors.Is(err, contracts.ErrConflict):
				t.Errorf("racing UpdateRun: err = %v, want nil or ErrConflict", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d racing UpdateRun calls won (%v), want exactly 1", len(winners), winners)
	}
	got, err := s.GetRun(ctx, p)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	if got.Version != created.Version+1 || got.Evaluations != winners[0] {
		t.Errorf("stored version %d evaluations %d, want version %d evaluations %d",
			got.Version, got.Evaluations, created.Version+1, winners[0])
	}
}
