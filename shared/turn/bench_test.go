package turn_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// BenchmarkAgentStep measures the embedded engine's overhead for one agent
// step — a model step that asks for a tool, the tool step, the answering
// model step and the commit — with the scripted model (no model latency)
// on the real SQLite backend and local sandbox. It reports the median
// (p50-ms/step) besides the mean.
func BenchmarkAgentStep(b *testing.B) {
	h := newHarness(b)
	s := h.session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		sub, _, err := h.rt.Engine.Accept(context.Background(), s.ID, "go", fmt.Sprint(i))
		if err != nil {
			b.Fatal(err)
		}
		h.drain()
		durs = append(durs, time.Since(start))
		if got := h.get(sub.ID); got.Phase != contracts.PhaseCommitted {
			b.Fatalf("phase %s %s", got.Phase, got.Error)
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms/step")
}

// BenchmarkConcurrentSessions runs turns on 8 sessions at once through the
// worker pool (as `cairn dev` does) and reports agent steps per second.
func BenchmarkConcurrentSessions(b *testing.B) {
	h := newHarness(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.rt.Workers.Concurrency = 4
	go func() { h.rt.Workers.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	const sessions = 8
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = h.session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}}).ID
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i, sid := range ids {
		n := b.N / sessions
		if i < b.N%sessions {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range n {
				wake := h.rt.EventSignal.Wait()
				sub, _, err := h.rt.Engine.Accept(ctx, sid, "go", fmt.Sprint(j))
				if err != nil {
					b.Error(err)
					return
				}
				for {
					got, err := h.store.GetSubmission(ctx, sub.ID)
					if err != nil {
						b.Error(err)
						return
					}
					if got.Phase.Terminal() {
						break
					}
					<-wake
					wake = h.rt.EventSignal.Wait()
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "steps/s")
}
