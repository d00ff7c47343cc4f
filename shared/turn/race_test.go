package turn_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// Two workers race on the same submission at every phase: each message is
// handed to two handler runs at once. Leases and conditional writes decide;
// the loser stops cleanly. Run under -race (make test does).
func TestTwoWorkersRaceAtEveryPhase(t *testing.T) {
	for _, model := range []string{"scripted:plain", "scripted:demo", "scripted:multi"} {
		t.Run(model, func(t *testing.T) {
			h := enginetest.New(t)
			ref := enginetest.New(t)
			rs := ref.Session(contracts.SessionSpec{Model: model})
			ref.Submit(rs.ID, "go")
			ref.Drain()

			handle := h.RT.Workers.Handle
			var errsMu sync.Mutex
			var errs []error
			h.RT.Workers.Handle = func(ctx context.Context, m contracts.Message) error {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := handle(ctx, m); err != nil {
						errsMu.Lock()
						errs = append(errs, err)
						errsMu.Unlock()
					}
				}()
				err := handle(ctx, m)
				wg.Wait()
				return err
			}
			s := h.Session(contracts.SessionSpec{Model: model})
			sub := h.Submit(s.ID, "go")
			h.Drain()
			got := h.Get(sub.ID)
			if got.Phase != contracts.PhaseCommitted {
				t.Fatalf("%s: %s (errors: %v)", got.Phase, got.Error, errs)
			}
			if h.Model.Calls() != ref.Model.Calls() {
				t.Fatalf("model calls = %d, want %d (one per step)", h.Model.Calls(), ref.Model.Calls())
			}
			if log := h.File(s.ID, "log.txt"); strings.Count(log, "\n") > 1 {
				t.Fatalf("mutating tool ran twice: %q", log)
			}
			a, b := ref.Transcript(rs.ID), h.Transcript(s.ID)
			if strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Fatalf("transcripts differ:\n%s\n---\n%s", strings.Join(b, "\n"), strings.Join(a, "\n"))
			}
		})
	}
}

// Two clients racing the same idempotency key get one submission.
func TestConcurrentAcceptSameKey(t *testing.T) {
	h := enginetest.New(t)
	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub, _, err := h.RT.Engine.Accept(context.Background(), s.ID, "hi", "same-key")
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = sub.ID
		}()
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("different submissions for one key: %v", ids)
		}
	}
	h.Drain()
	if got := h.Get(ids[0]); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
}
