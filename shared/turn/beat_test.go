package turn

import (
	"sync/atomic"
	"testing"
	"time"
)

// A beat runs f again and again until f says stop; it is not re-armed after.
func TestBeatRunsUntilFSaysStop(t *testing.T) {
	runs := make(chan int, 8)
	var n atomic.Int32
	b := every(time.Microsecond, func() bool {
		k := int(n.Add(1))
		runs <- k
		return k < 3
	})
	for want := 1; want <= 3; want++ {
		if got := <-runs; got != want {
			t.Fatalf("run %d, want %d", got, want)
		}
	}
	b.stop()
	b.stop() // idempotent
	if got := n.Load(); got != 3 {
		t.Errorf("%d runs, want 3: a beat ran on after f said stop", got)
	}
}

// stop waits for a run in progress and no run starts after it returns.
func TestBeatStopWaitsForARunInProgress(t *testing.T) {
	for _, kind := range []string{"every", "ticked"} {
		t.Run(kind, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var n, after atomic.Int32
			var stopped atomic.Bool
			f := func() bool {
				if stopped.Load() {
					after.Add(1)
				}
				if n.Add(1) == 1 {
					close(entered)
					<-release
				}
				return true
			}
			ticks := make(chan time.Time, 4)
			var b *beat
			if kind == "every" {
				b = every(time.Microsecond, f)
			} else {
				ticks <- time.Time{}
				b = ticked(ticks, func() {}, f)
			}
			<-entered
			returned := make(chan struct{})
			go func() { b.stop(); stopped.Store(true); close(returned) }()
			select {
			case <-returned:
				t.Fatal("stop returned while a run was in progress")
			default:
			}
			close(release)
			<-returned
			if kind == "ticked" {
				ticks <- time.Time{} // nobody runs it: the beat's goroutine is gone
			}
			if after.Load() != 0 {
				t.Errorf("%d runs after stop returned", after.Load())
			}
		})
	}
}
