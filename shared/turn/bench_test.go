package turn_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// BenchmarkAgentStep measures the embedded engine's overhead per agent
// step with the scripted model (no model latency) on the real SQLite
// backend and local sandbox. One op is a whole two-step turn in a fresh
// session: accept, model step 1 (asks for list_dir), the tool step, model
// step 2 (answers), commit — every queue hop included. It reports the
// median turn and the median per step (turn / 2 model steps).
func BenchmarkAgentStep(b *testing.B) {
	h := enginetest.New(b)
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer() // a fresh session per turn: the cost of a long transcript is not per-step overhead
		s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
		b.StartTimer()
		start := time.Now()
		sub, _, err := h.RT.Engine.Accept(context.Background(), s.ID, "go", fmt.Sprint(i))
		if err != nil {
			b.Fatal(err)
		}
		h.Drain()
		durs = append(durs, time.Since(start))
		if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
			b.Fatalf("phase %s %s", got.Phase, got.Error)
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	p50 := float64(durs[len(durs)/2].Microseconds()) / 1000
	b.ReportMetric(p50, "p50-ms/turn")
	b.ReportMetric(p50/2, "p50-ms/step")
}

// BenchmarkConcurrentSessions runs turns in 8 sessions at once through the
// worker pool (as `cairn dev` does) and reports turns and agent steps per
// second (each turn: 2 model steps, 1 tool step, commit).
func BenchmarkConcurrentSessions(b *testing.B) {
	h := enginetest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.RT.Workers.Concurrency = 2
	go func() { h.RT.Workers.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	const sessions = 8
	spec := contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sessions {
		n := b.N / sessions
		if i < b.N%sessions {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				// a fresh session per turn (8 lanes at once): transcript
				// growth is not per-step overhead
				sess, err := h.RT.Engine.CreateSession(ctx, "bench", spec)
				if err != nil {
					b.Error(err)
					return
				}
				wake := h.RT.EventSignal.Wait()
				sub, _, err := h.RT.Engine.Accept(ctx, sess.ID, "go", "")
				if err != nil {
					b.Error(err)
					return
				}
				for {
					got, err := h.Store.GetSubmission(ctx, sub.ID)
					if err != nil {
						b.Error(err)
						return
					}
					if got.Phase.Terminal() {
						break
					}
					// the end event is written just before the terminal
					// advance, so also re-check shortly after a wake-up
					select {
					case <-wake:
					case <-time.After(2 * time.Millisecond):
					}
					wake = h.RT.EventSignal.Wait()
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/secs, "turns/s")
	b.ReportMetric(2*float64(b.N)/secs, "steps/s") // the bench turn has 2 model steps
}
