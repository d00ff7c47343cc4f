package dynamo

import (
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/conformance/journaltest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/storetest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/workflowtest"
)

// The suites run unchanged against one Store on the shared table, as they
// would against a shared real backend (their ids are unique per test).

func TestJournalConformance(t *testing.T) {
	s := env(t).store(t, Options{})
	journaltest.Run(t, func(*testing.T) contracts.JournalStore { return s })
}

func TestTranscriptConformance(t *testing.T) {
	s := env(t).store(t, Options{})
	storetest.RunTranscript(t, func(*testing.T) contracts.TranscriptStore { return s })
}

func TestStreamConformance(t *testing.T) {
	s := env(t).store(t, Options{})
	storetest.RunStream(t, func(*testing.T) contracts.StreamStore { return s })
}

func TestEventsConformance(t *testing.T) {
	s := env(t).store(t, Options{})
	storetest.RunEvents(t, func(*testing.T) contracts.EventLog { return s })
	workflowtest.Run(t, func(*testing.T) contracts.WorkflowStore { return s.Workflows() })
}

func TestWorkflowConformance(t *testing.T) {
	s := env(t).store(t, Options{})
	workflowtest.Run(t, func(*testing.T) contracts.WorkflowStore { return s.Workflows() })
}

// TestWorkflowConformanceSmallPages runs the workflow suite with Query
// pages of 16 items, so ListNodes (250 nodes) and ListRuns follow
// LastEvaluatedKey across many pages.
func TestWorkflowConformanceSmallPages(t *testing.T) {
	s := env(t).store(t, Options{})
	s.pageSize = 16
	workflowtest.Run(t, func(*testing.T) contracts.WorkflowStore { return s.Workflows() })
}

// TestConformanceSmallClaimCheck runs the suites again with a claim check
// threshold so low that every record goes through the BlobStore.
func TestConformanceSmallClaimCheck(t *testing.T) {
	s := env(t).store(t, Options{ClaimCheckBytes: 1})
	journaltest.Run(t, func(*testing.T) contracts.JournalStore { return s })
	storetest.RunTranscript(t, func(*testing.T) contracts.TranscriptStore { return s })
	storetest.RunStream(t, func(*testing.T) contracts.StreamStore { return s })
	storetest.RunEvents(t, func(*testing.T) contracts.EventLog { return s })
	workflowtest.Run(t, func(*testing.T) contracts.WorkflowStore { return s.Workflows() })
}
