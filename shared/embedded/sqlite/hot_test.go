package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
)

// A short read runs on the writer's connection when its slot is free; while
// a batch holds the slot it goes to the pool, without waiting for the
// batch, and sees what is committed — not the batch's writes, nor, once
// the batch is undone, anything of it.
func TestReadsDoNotWaitForABatch(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{Clock: newManualClock()})
	sub := mustSub(t, s, "sub-1")
	if err := s.AppendEvents(ctx, contracts.Event{SubmissionID: "sub-1", Key: "k1", Type: contracts.EventStep}); err != nil {
		t.Fatal(err)
	}
	read := func() (int64, int, error) {
		v, err := s.SubmissionVersion(ctx, "sub-1")
		if err != nil {
			return 0, 0, err
		}
		if _, err := s.GetSubmission(ctx, "sub-1"); err != nil {
			return 0, 0, err
		}
		evs, err := s.ListEvents(ctx, "sub-1", 0, 10)
		return v, len(evs), err
	}
	inside, outside := make(chan struct{}), make(chan struct{})
	type seen struct {
		version int64
		events  int
		err     error
	}
	got := make(chan seen, 1)
	go func() {
		<-inside // the batch holds the slot and has written
		v, n, err := read()
		got <- seen{v, n, err}
		close(outside)
	}()
	err := s.Batch(ctx, func(ctx context.Context) error {
		if _, err := s.UpdateSubmission(ctx, sub, 1); err != nil {
			return err
		}
		if err := s.AppendEvents(ctx, contracts.Event{SubmissionID: "sub-1", Key: "k2", Type: contracts.EventStep}); err != nil {
			return err
		}
		close(inside)
		<-outside                    // a read waiting for this slot would never come back: the test times out
		return contracts.ErrConflict // undone
	})
	if err == nil {
		t.Fatal("the batch was meant to fail")
	}
	r := <-got
	if r.err != nil || r.version != 1 || r.events != 1 {
		t.Errorf("read during the batch: version %d, %d events, %v; want the committed version 1 and 1 event", r.version, r.events, r.err)
	}
	if v, n, err := read(); err != nil || v != 1 || n != 1 {
		t.Errorf("read after the undone batch: version %d, %d events, %v; want 1 and 1", v, n, err)
	}
	// A long page (beyond the writer's bound) reads the same.
	if evs, err := s.ListEvents(ctx, "sub-1", 0, 0); err != nil || len(evs) != 1 || evs[0].Key != "k1" {
		t.Errorf("unbounded list: %+v, %v", evs, err)
	}
}
