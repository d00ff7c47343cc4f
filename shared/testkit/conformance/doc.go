// Package conformance is the home of cairn's port conformance suites, one
// sub-package per port: journaltest (JournalStore), storetest
// (TranscriptStore, StreamStore, EventLog, BlobStore) and queuetest (Queue).
//
// Every adapter — the embedded SQLite store on every `go test`, the
// DynamoDB/SQS/S3 adapters against a LocalStack-compatible endpoint — runs
// the same suites, the way testing/fstest.TestFS checks any file system. The
// suites import only contracts, testing and the standard library, and they
// use ids unique to each test so they can share one real backend.
//
// # Usage
//
//	func TestJournal(t *testing.T) {
//		journaltest.Run(t, func(t *testing.T) contracts.JournalStore { return newStore(t) })
//	}
package conformance
