// Package conformance is the home of cairn's port conformance suites, one
// sub-package per port: journaltest (JournalStore), storetest
// (TranscriptStore, StreamStore, EventLog, BlobStore), queuetest (Queue),
// workflowtest (WorkflowStore) and sandboxtest (SandboxAPI). It holds no
// code.
//
// Every adapter — the embedded SQLite store on every `go test`, the
// DynamoDB/SQS/S3 adapters against a LocalStack-compatible endpoint — runs
// the same suites, the way testing/fstest.TestFS checks any file system. The
// suites import only contracts, the standard library and internal/unique,
// which gives them ids unique to each test so they can share one real
// backend.
//
// It may import nothing.
//
// # Usage
//
//	func TestJournal(t *testing.T) {
//		journaltest.Run(t, func(t *testing.T) contracts.JournalStore { return newStore(t) })
//	}
package conformance
