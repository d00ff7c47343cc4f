package sqlite_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/testkit/conformance/journaltest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/queuetest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/storetest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/workflowtest"
)

// manualClock is a contracts.Clock that moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func open(t *testing.T, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "cairn.db"), opts)
}

func openAt(t *testing.T, path string, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func fresh(t *testing.T) *sqlite.Store { return open(t, sqlite.Options{Clock: newManualClock()}) }

func TestJournalConformance(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) contracts.JournalStore { return fresh(t) })
}

func TestTranscriptConformance(t *testing.T) {
	storetest.RunTranscript(t, func(t *testing.T) contracts.TranscriptStore { return fresh(t) })
}

func TestStreamConformance(t *testing.T) {
	storetest.RunStream(t, func(t *testing.T) contracts.StreamStore { return fresh(t) })
}

func TestEventsConformance(t *testing.T) {
	storetest.RunEvents(t, func(t *testing.T) contracts.EventLog { return fresh(t) })
}

func TestBlobConformance(t *testing.T) {
	storetest.RunBlob(t, func(t *testing.T) contracts.BlobStore { return fresh(t) })
}

func TestQueueConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Harness {
		clock := newManualClock()
		s := open(t, sqlite.Options{Clock: clock, MaxReceives: 3, DedupWindow: time.Minute})
		return queuetest.Harness{Queue: s, MaxReceives: 3, Advance: clock.Advance, DedupWindow: time.Minute}
	})
}

// TestConformanceSharedStore runs the suites against one store shared by
// every subtest, as they will run against a shared real backend.
func TestConformanceSharedStore(t *testing.T) {
	s := fresh(t)
	journaltest.Run(t, func(*testing.T) contracts.JournalStore { return s })
	storetest.RunTranscript(t, func(*testing.T) contracts.TranscriptStore { return s })
	storetest.RunStream(t, func(*testing.T) contracts.StreamStore { return s })
	storetest.RunEvents(t, func(*testing.T) contracts.EventLog { return s })
	storetest.RunBlob(t, func(*testing.T) contracts.BlobStore { return s })
	workflowtest.Run(t, func(*testing.T) contracts.WorkflowStore { return s.Workflows() })
}

func TestWorkflowConformance(t *testing.T) {
	workflowtest.Run(t, func(t *testing.T) contracts.WorkflowStore { return fresh(t).Workflows() })
}
