// Package queuetest is the conformance suite for contracts.Queue (SQS FIFO
// semantics as cairn uses them). Every queue adapter runs it.
//
// It may import shared/contracts and the standard library (testing
// included).
//
// The suite checks send/receive/delete, deduplication within the window and
// acceptance after it, visibility timeouts and redelivery with a growing
// receive count, Release, in-order delivery per group (session) with other
// groups unaffected, dead-lettering after MaxReceives with the group
// unblocked, and that concurrent receivers never share a message. Time moves
// only through Harness.Advance, so an adapter with an injectable clock runs
// the suite without sleeping. Queue names are unique per test.
//
// # Usage
//
//	func TestQueueConformance(t *testing.T) {
//		queuetest.Run(t, func(t *testing.T) queuetest.Harness {
//			clock := newManualClock()
//			s := openStore(t, clock)
//			return queuetest.Harness{Queue: s, MaxReceives: 5, Advance: clock.Advance}
//		})
//	}
package queuetest
