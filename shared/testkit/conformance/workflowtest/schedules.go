package workflowtest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// getSchedule reads schedule id, failing the test on an error.
func getSchedule(t *testing.T, s contracts.WorkflowStore, id string) contracts.Schedule {
	t.Helper()
	got, err := s.GetSchedule(context.Background(), id)
	if err != nil {
		t.Fatalf("GetSchedule(%s): %v", id, err)
	}
	return got
}

// listedSchedules lists the schedules whose id starts with prefix.
func listedSchedules(t *testing.T, s contracts.WorkflowStore, prefix string) map[string]contracts.Schedule {
	t.Helper()
	all, err := s.ListSchedules(context.Background())
	if err != nil {
		t.Fatalf("ListSchedules: %v", err)
	}
	out := map[string]contracts.Schedule{}
	for _, sc := range all {
		if strings.HasPrefix(sc.ID, prefix) {
			out[sc.ID] = sc
		}
	}
	return out
}

func testScheduleUpdate(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	sc := newSchedule(p, p+"-wf")
	if _, err := s.CreateSchedule(ctx, sc); err != nil {
		t.Fatalf("CreateSchedule: %v", err)
	}
	paused := sc
	paused.Paused, paused.UpdatedAt = true, at(10)
	got, err := s.UpdateSchedule(ctx, paused)
	if err != nil {
		t.Fatalf("UpdateSchedule(paused): %v", err)
	}
	equal(t, "UpdateSchedule returned", got, paused, normSchedule)
	equal(t, "GetSchedule after pause", getSchedule(t, s, p), paused, normSchedule)
	if !getSchedule(t, s, p).UpdatedAt.Equal(at(10)) {
		t.Errorf("UpdatedAt did not round-trip to the nanosecond")
	}
	if l := listedSchedules(t, s, p); len(l) != 1 || !l[p].Paused {
		t.Errorf("ListSchedules after pause: %+v, want the schedule, paused (a paused schedule is still listed)", l)
	}
	// The same update again is no error (pause is idempotent), and so is
	// the way back.
	if _, err := s.UpdateSchedule(ctx, paused); err != nil {
		t.Fatalf("repeated UpdateSchedule: %v", err)
	}
	resumed := paused
	resumed.Paused, resumed.UpdatedAt = false, at(20)
	if _, err := s.UpdateSchedule(ctx, resumed); err != nil {
		t.Fatalf("UpdateSchedule(resumed): %v", err)
	}
	equal(t, "GetSchedule after resume", getSchedule(t, s, p), resumed, normSchedule)
}

func testScheduleUpdateMissing(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	sc := newSchedule(p, p+"-wf")
	sc.Paused = true
	if _, err := s.UpdateSchedule(ctx, sc); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("UpdateSchedule(missing): err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetSchedule(ctx, p); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetSchedule after UpdateSchedule(missing): err = %v, want ErrNotFound (an update never creates)", err)
	}
}

func testScheduleDelete(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	gone, kept := newSchedule(p+"-a", p+"-wf"), newSchedule(p+"-b", p+"-wf")
	for _, sc := range []contracts.Schedule{gone, kept} {
		if _, err := s.CreateSchedule(ctx, sc); err != nil {
			t.Fatalf("CreateSchedule: %v", err)
		}
	}
	if err := s.DeleteSchedule(ctx, gone.ID); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
	if _, err := s.GetSchedule(ctx, gone.ID); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetSchedule after DeleteSchedule: err = %v, want ErrNotFound", err)
	}
	equal(t, "the other schedule", getSchedule(t, s, kept.ID), kept, normSchedule)
	l := listedSchedules(t, s, p)
	if _, ok := l[gone.ID]; ok || len(l) != 1 {
		t.Errorf("ListSchedules after DeleteSchedule: %v, want only %s", slices.Collect(maps.Keys(l)), kept.ID)
	}
	if err := s.DeleteSchedule(ctx, gone.ID); err != nil {
		t.Fatalf("repeated DeleteSchedule: %v, want nil (absent is not an error)", err)
	}
	if err := s.DeleteSchedule(ctx, p+"-never"); err != nil {
		t.Fatalf("DeleteSchedule(never existed): %v, want nil", err)
	}
	late := gone
	late.Paused = true
	if _, err := s.UpdateSchedule(ctx, late); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("UpdateSchedule after DeleteSchedule: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetSchedule(ctx, gone.ID); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("GetSchedule after a late update: err = %v, want ErrNotFound (not resurrected)", err)
	}
}

func testScheduleUpdateBig(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	sc := newSchedule(p, p+"-wf")
	sc.Input = bigJSON(250 << 10)
	if _, err := s.CreateSchedule(ctx, sc); err != nil {
		t.Fatalf("CreateSchedule(250 KiB input): %v", err)
	}
	sc.Paused, sc.UpdatedAt = true, at(5)
	if _, err := s.UpdateSchedule(ctx, sc); err != nil {
		t.Fatalf("UpdateSchedule(250 KiB input): %v", err)
	}
	read := getSchedule(t, s, p)
	equal(t, "GetSchedule(250 KiB input, paused)", read, sc, normSchedule)
	if string(read.Input) != string(sc.Input) {
		t.Errorf("Input differs byte for byte after the update")
	}
}

// Updates racing a delete: whichever order they land in, once the delete
// has happened no update brings the schedule back.
func testRacingScheduleUpdatesAndDelete(t *testing.T, s contracts.WorkflowStore) {
	ctx := context.Background()
	p := uniq(t)
	sc := newSchedule(p, p+"-wf")
	if _, err := s.CreateSchedule(ctx, sc); err != nil {
		t.Fatalf("CreateSchedule: %v", err)
	}
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			up := sc
			up.Paused, up.UpdatedAt = i%2 == 0, at(i+1)
			if _, err := s.UpdateSchedule(ctx, up); err != nil && !errors.Is(err, contracts.ErrNotFound) {
				t.Errorf("racing UpdateSchedule %d: %v", i, err)
			}
		})
	}
	wg.Go(func() {
		<-start
		if err := s.DeleteSchedule(ctx, p); err != nil {
			t.Errorf("racing DeleteSchedule: %v", err)
		}
	})
	close(start)
	wg.Wait()
	if got, err := s.GetSchedule(ctx, p); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("after racing updates and a delete: GetSchedule = %+v, %v; want ErrNotFound", got, err)
	}
}
