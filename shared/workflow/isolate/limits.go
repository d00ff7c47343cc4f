package isolate

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// DefaultMemoryMiB is the memory an evaluation may take (see Limits).
	DefaultMemoryMiB = 512
	// MinMemoryMiB is the least an isolate is given.
	MinMemoryMiB = 32
	// DefaultCPUSeconds caps an isolate's CPU time (RLIMIT_CPU): below the
	// default wall clock, so a busy script ends with the CPU reason.
	DefaultCPUSeconds = 5
	// maxOpenFiles: stdin, stdout, stderr and a few the runtime keeps.
	maxOpenFiles = 16
	// maxFileBytes caps any file the process writes (RLIMIT_FSIZE): enough
	// for a response when stdout is a file, nothing more.
	maxFileBytes = 16 << 20
	// spareThreads: OS threads created before RLIMIT_NPROC forbids more.
	spareThreads = 8
	// heapPoll is how often the heap guard looks at the heap.
	heapPoll = 5 * time.Millisecond
	// unknownBaseMiB stands for the process's own writable memory where
	// /proc/self/status cannot be read.
	unknownBaseMiB = 256
)

// Limits are what an isolate process lowers for itself before it
// evaluates. Zero fields take the defaults.
//
// MemoryMiB is the writable memory the evaluation may add to what the
// process already has: RLIMIT_DATA is set to the process's VmData plus
// MemoryMiB. Not RLIMIT_AS: the Go runtime and Starlark reserve gigabytes
// of address space they never touch (5.4 GiB measured). Not a fixed
// RLIMIT_DATA either: a process's own writable memory varies by build
// (72 MiB measured without cgo, mostly untouched runtime and crypto tables,
// for 4.5 MiB resident; about 100 MiB more with cgo, whose threads get 8
// MiB stacks). The heap guard and Go's memory limit work within MemoryMiB.
type Limits struct {
	MemoryMiB  int `json:"memory_mib,omitempty"`
	CPUSeconds int `json:"cpu_seconds,omitempty"`
}

func (l Limits) withDefaults() Limits {
	if l.MemoryMiB <= 0 {
		l.MemoryMiB = DefaultMemoryMiB
	}
	l.MemoryMiB = max(l.MemoryMiB, MinMemoryMiB)
	if l.CPUSeconds <= 0 {
		l.CPUSeconds = DefaultCPUSeconds
	}
	return l
}

func (l Limits) memoryBytes() uint64 { return uint64(l.withDefaults().MemoryMiB) << 20 }

// lockDown sets the limits that never change: no core files, bounded file
// writes, a handful of descriptors, and no new processes. RLIMIT_NPROC
// counts threads too, and a Go runtime that cannot start a thread it wants
// crashes; so first the process runs on one P (an evaluation is one
// goroutine; more Ps only make the collector start threads) and makes a
// few spare OS threads that the runtime parks and reuses for system calls.
// For root, the kernel does not enforce RLIMIT_NPROC.
func lockDown(openFiles uint64) error {
	for _, r := range []struct {
		name     string
		resource int
		value    uint64
	}{
		{"RLIMIT_CORE", unix.RLIMIT_CORE, 0},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, maxFileBytes},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, openFiles},
	} {
		if err := setrlimit(r.resource, r.value, r.value); err != nil {
			return fmt.Errorf("setting %s: %w", r.name, err)
		}
	}
	runtime.GOMAXPROCS(1)
	spawnSpareThreads(spareThreads)
	if err := setrlimit(unix.RLIMIT_NPROC, 0, 0); err != nil {
		return fmt.Errorf("setting RLIMIT_NPROC: %w", err)
	}
	return nil
}

// applyLimits sets the memory and CPU caps (soft = hard for memory; the CPU
// hard cap is one second past the soft one, whose SIGXCPU the isolate turns
// into a clean failure) and Go's own memory limit, so the collector works
// hard before the cap is reached.
func applyLimits(l Limits) error {
	l = l.withDefaults()
	data := ownDataBytes() + l.memoryBytes()
	if err := setrlimit(unix.RLIMIT_DATA, data, data); err != nil {
		return fmt.Errorf("setting RLIMIT_DATA to %d MiB: %w", data>>20, err)
	}
	if err := setrlimit(unix.RLIMIT_CPU, uint64(l.CPUSeconds), uint64(l.CPUSeconds)+1); err != nil {
		return fmt.Errorf("setting RLIMIT_CPU to %d s: %w", l.CPUSeconds, err)
	}
	debug.SetMemoryLimit(int64(l.memoryBytes()) * 3 / 4)
	debug.SetMaxStack(64 << 20)
	return nil
}

// setrlimit lowers a limit; a value above the current hard limit keeps the
// hard limit (a process may only lower it).
func setrlimit(resource int, soft, hard uint64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(resource, &cur); err != nil {
		return err
	}
	hard = min(hard, cur.Max)
	soft = min(soft, hard)
	return unix.Setrlimit(resource, &unix.Rlimit{Cur: soft, Max: hard})
}

// spawnSpareThreads makes n OS threads at once (each goroutine locks its
// own) and releases them; the runtime keeps them idle for reuse.
func spawnSpareThreads(n int) {
	locked := make(chan struct{})
	release := make(chan struct{})
	done := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			locked <- struct{}{}
			<-release
			runtime.UnlockOSThread()
			done <- struct{}{}
		}()
	}
	for range n {
		<-locked
	}
	close(release)
	for range n {
		<-done
	}
}

// guardHeap cancels ctx with a memory-limit cause when the heap that
// survived the last collection passes half of MemoryMiB, or the memory the
// runtime holds passes seven eighths: the evaluation then ends with a
// reason instead of the process dying at the cap. (Go's memory limit, three
// quarters, makes the collector work hard first.) It stops when ctx ends.
func guardHeap(ctx context.Context, cancel context.CancelCauseFunc, l Limits) {
	usable := l.memoryBytes()
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	t := time.NewTicker(heapPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			metrics.Read(samples)
			live, held := sampleBytes(samples[0]), sampleBytes(samples[1])-sampleBytes(samples[2])
			if live > usable/2 || held > usable/8*7 {
				cancel(fmt.Errorf("memory limit exceeded (%d MiB in use; limit %d MiB)", max(live, held)>>20, l.withDefaults().MemoryMiB))
				return
			}
		}
	}
}

func sampleBytes(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// cpuSignal is the signal the kernel sends at the soft CPU limit.
const cpuSignal = syscall.SIGXCPU

// ownDataBytes is the process's writable private memory now (VmData), what
// RLIMIT_DATA counts.
func ownDataBytes() uint64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return unknownBaseMiB << 20
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmData:"); ok {
			var kib uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kib); err == nil {
				return kib << 10
			}
		}
	}
	return unknownBaseMiB << 20
}
