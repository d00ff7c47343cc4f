package workflow

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cairnrun/cairn/shared/contracts"
)

// DefaultStartReserve is the time an evaluation keeps before its deadline
// (Driver.StartReserve): with less left it starts no further node, records
// how far it got and wakes the run to go on, so a function timeout never
// cuts a start short (a turn accepted and not begun would wait for repair).
const DefaultStartReserve = 5 * time.Second

// startNodes starts the pending nodes (in Seq order) whose Seq is at least
// from, d.Starts at a time in Seq order. Every pending node whose Seq is
// below the returned below has been started (or has a result); more says it
// stopped near ctx's deadline with nodes left to start. The first round of
// d.Starts always starts, so a run moves on under any deadline.
func (d *Driver) startNodes(ctx context.Context, run contracts.WorkflowRun, pending []contracts.PendingNode, from int) (below int, more bool, err error) {
	var todo []contracts.PendingNode
	for _, p := range pending {
		if p.Seq >= from {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return from, false, nil
	}
	n := max(d.Starts, 1)
	var (
		mu    sync.Mutex
		next  int // todo[:next] were taken: without an error, every one of them started
		first error
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || next >= len(todo) || next >= n && d.nearDeadline(ctx) {
			return 0, false
		}
		next++
		return next - 1, true
	}
	var caught any // a start's panic, raised again in the caller's goroutine
	work := func() {
		for i, ok := take(); ok; i, ok = take() {
			if err := d.startNode(ctx, run, todo[i]); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
		}
	}
	guarded := func() {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				caught, first = r, errors.New("a start panicked")
				mu.Unlock()
			}
		}()
		work()
	}
	var wg sync.WaitGroup
	for range min(n, len(todo)) - 1 {
		wg.Go(guarded)
	}
	guarded() // in the caller's goroutine: one at a time needs no other
	wg.Wait() // a panic waits for the other starts, then goes on up
	if caught != nil {
		panic(caught)
	}
	if first != nil {
		return 0, false, first
	}
	counted(ctx, attribute.Int("cairn.workflow.nodes.started", next))
	if next == len(todo) {
		return todo[next-1].Seq + 1, false, nil
	}
	return todo[next].Seq, true, nil
}

// nearDeadline reports whether less than the start reserve is left before
// ctx's deadline (none: never).
func (d *Driver) nearDeadline(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		return false
	}
	reserve := d.StartReserve
	if reserve <= 0 {
		reserve = DefaultStartReserve
	}
	return time.Until(deadline) < reserve
}
