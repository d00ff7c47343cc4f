package placement_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

func TestLocks(t *testing.T) {
	var l placement.Locks
	ctx := context.Background()
	unlock, err := l.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	// Another key is independent.
	u2, err := l.Lock(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	u2()
	// A waiter whose context ends gives up.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Lock(cctx, "s"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	// Holders never overlap.
	unlock()
	var mu sync.Mutex
	inside, maxInside := 0, 0
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			u, err := l.Lock(ctx, "s")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			maxInside = max(maxInside, inside)
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
			u()
		})
	}
	wg.Wait()
	if maxInside != 1 {
		t.Fatalf("%d holders at once", maxInside)
	}
}
