// Package storetest holds the conformance suites for the work-product
// stores: RunTranscript (contracts.TranscriptStore), RunStream
// (contracts.StreamStore), RunEvents (contracts.EventLog) and RunBlob
// (contracts.BlobStore). Every adapter runs them.
//
// It may import shared/contracts, shared/testkit/conformance/internal/unique
// and the standard library (testing included).
//
// The suites check create-if-absent writes (re-doing a write is harmless and
// the first content wins), ordered reads, ErrNotFound for missing records,
// and the event log's idempotent append with store-assigned, strictly
// increasing sequence numbers. Keys are unique per test, so the suites may
// run against a shared real backend.
//
// # Usage
//
//	func TestStores(t *testing.T) {
//		open := func(t *testing.T) *sqlite.Store { ... }
//		storetest.RunTranscript(t, func(t *testing.T) contracts.TranscriptStore { return open(t) })
//		storetest.RunStream(t, func(t *testing.T) contracts.StreamStore { return open(t) })
//		storetest.RunEvents(t, func(t *testing.T) contracts.EventLog { return open(t) })
//		storetest.RunBlob(t, func(t *testing.T) contracts.BlobStore { return open(t) })
//	}
package storetest
