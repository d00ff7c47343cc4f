package turn_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// BenchmarkAgentStep measures the embedded engine's overhead per agent
// step with the scripted model (no model latency) on the real SQLite
// backend and local sandbox. One op is a whole two-step turn in a fresh
// session: accept, model step 1 (asks for list_dir), the tool step, model
// step 2 (answers), commit — every queue hop included, run by the worker
// pool as `cairn dev` runs it, the caller waiting for the end as the API's
// long-poll does. It reports the median turn and the median per step
// (turn / 2 model steps).
func BenchmarkAgentStep(b *testing.B) { benchAgentStep(b, true) }

// BenchmarkAgentStepInSession is BenchmarkAgentStep with every turn in one
// session, one after another (a conversation's next turns): the session's
// workspace exists after the first turn, as the peers' tool directory
// does, and the transcript grows (4 nodes a turn; the path cache keeps a
// step's reads flat).
func BenchmarkAgentStepInSession(b *testing.B) { benchAgentStep(b, false) }

func benchAgentStep(b *testing.B, fresh bool) {
	h := enginetest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { h.RT.Workers.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()
	durs := make([]time.Duration, 0, b.N)
	var commits uint64
	spec := contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}}
	s := h.Session(spec)
	b.ResetTimer()
	for i := range b.N {
		if fresh {
			b.StopTimer() // a fresh session per turn: the cost of a long transcript is not per-step overhead
			s = h.Session(spec)
			b.StartTimer()
		}
		before := h.Store.Commits()
		start := time.Now()
		sub, _, err := h.RT.Engine.Accept(ctx, s.ID, "go", fmt.Sprint(i))
		if err != nil {
			b.Fatal(err)
		}
		if err := awaitEnd(ctx, h, sub.ID); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		commits += h.Store.Commits() - before
		if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
			b.Fatalf("phase %s %s", got.Phase, got.Error)
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	p50 := float64(durs[len(durs)/2].Microseconds()) / 1000
	b.ReportMetric(p50, "p50-ms/turn")
	b.ReportMetric(p50/2, "p50-ms/step")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/turn")
}

// BenchmarkConcurrentSessions runs turns in 8 sessions at once through the
// worker pool (as `cairn dev` does), each session's turns one after
// another, and reports turns and agent steps per second (each turn: 2
// model steps, 1 tool step, commit).
func BenchmarkConcurrentSessions(b *testing.B) {
	h := enginetest.New(b)
	const sessions = 8
	spec := contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}}
	lanes := make([]contracts.Session, sessions)
	for i := range lanes {
		lanes[i] = h.Session(spec)
		h.Submit(lanes[i].ID, "warm up") // its workspace, before the clock starts
	}
	h.Drain()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.RT.Workers.Concurrency = 2
	go func() { h.RT.Workers.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	b.ResetTimer()
	cpu0 := cpuTime()
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
			// One session per lane, its turns one after another (a
			// conversation's next turns, as BenchmarkAgentStepInSession):
			// its workspace exists after the first turn, as the peers'
			// tool directory does; a session's creation and first
			// workspace are BenchmarkAgentStep's.
			sess := lanes[i]
			for range n {
				sub, _, err := h.RT.Engine.Accept(ctx, sess.ID, "go", "")
				if err != nil {
					b.Error(err)
					return
				}
				if err := awaitEnd(ctx, h, sub.ID); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/turn")
	b.ReportMetric(float64(b.N)/secs, "turns/s")
	b.ReportMetric(2*float64(b.N)/secs, "steps/s") // the bench turn has 2 model steps
}

// awaitEnd waits as a client of the API's event stream does: woken by
// each append to the turn's events, it reads those after its cursor, until
// the end event (which commits with the terminal write).
func awaitEnd(ctx context.Context, h *enginetest.Harness, id string) error {
	var after int64
	for {
		wake, done := h.RT.SubmissionSignals.Wait(id)
		evs, err := h.Store.ListEvents(ctx, id, after, 100)
		if err != nil {
			done()
			return err
		}
		for _, ev := range evs {
			after = ev.Seq
			switch ev.Type {
			case contracts.EventCommitted, contracts.EventFailed, contracts.EventCancelled:
				done()
				return nil
			}
		}
		if len(evs) == 0 {
			select {
			case <-wake:
			case <-time.After(50 * time.Millisecond): // a guard only: every append wakes
			}
		}
		done()
	}
}

// BenchmarkLongSession measures a turn's cost per agent step in sessions
// whose transcript already holds 10, 100 and 1,000 nodes: a model step
// reads only the nodes added since the engine's last read of the session
// (paths.go), so the cost per step must not grow with the session (the
// issue's bound: at 1,000 within 2× of 10). Each op is a fresh session of
// that length with one warm-up turn (outside the timer), then one timed
// turn.
func BenchmarkLongSession(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			h := enginetest.New(b)
			ctx := context.Background()
			spec := contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}}
			var total time.Duration
			for i := range b.N {
				b.StopTimer()
				s := h.Session(spec)
				parent := ""
				for k := range n {
					role := contracts.RoleUser
					if k%2 == 1 {
						role = contracts.RoleAssistant
					}
					id := fmt.Sprintf("node_%s_%d", s.ID, k)
					if err := h.Store.PutNode(ctx, contracts.Node{ID: id, Parent: parent, SessionID: s.ID, Role: role,
						Blocks: []contracts.Block{{Type: contracts.BlockText, Text: fmt.Sprintf("message %d of a long conversation, long enough to cost decoding", k)}}}); err != nil {
						b.Fatal(err)
					}
					parent = id
				}
				cur, err := h.Store.GetSession(ctx, s.ID)
				if err != nil {
					b.Fatal(err)
				}
				cur.Head = parent
				if _, err := h.Store.UpdateSession(ctx, cur, cur.Version); err != nil {
					b.Fatal(err)
				}
				for _, timed := range []bool{false, true} {
					if timed {
						b.StartTimer()
					}
					start := time.Now()
					sub, _, err := h.RT.Engine.Accept(ctx, s.ID, "go", fmt.Sprint(i, timed))
					if err != nil {
						b.Fatal(err)
					}
					h.Drain()
					if timed {
						total += time.Since(start)
					}
					if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
						b.Fatalf("phase %s %s", got.Phase, got.Error)
					}
				}
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(2*b.N), "ms/step")
		})
	}
}

// cpuTime is the user + system time of this process (every goroutine: the
// workers, SQLite, the sandbox), as the peer harness counts DBOS's.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
