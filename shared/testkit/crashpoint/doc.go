// Package crashpoint injects simulated process crashes at the write points of
// cairn's store and queue ports, for crash-recovery tests.
//
// Wrap decorates the JournalStore, TranscriptStore, StreamStore, EventLog and
// Queue of an assemble.Ports so that every write call (Create*, Update*, Mark*,
// Put*, Complete, Append*, Send, Delete, Release — never a read), and the
// commit of a batch (Ports.Batch), is counted in one shared *Plan. At write number Plan.K the decorator panics with the
// sentinel Crash, either before calling the inner adapter (Plan.Before) or
// after it returned, so the write is either lost or durable while the
// handler dies. A Plan fires at most once; a Plan with K = 0 only counts,
// which is how a test learns the number of write points of a scenario.
//
// The panic stands for the death of the process: worker.Pool recovers a
// handler panic as a failure and leaves the message in flight, exactly what
// a killed Lambda or `cairn dev` process leaves behind. Test code that calls
// the engine directly recovers it with Recover.
//
// The queue decorator also records the deliveries received and neither
// deleted nor released; Plan.ReleaseInflight makes them visible at once,
// standing for their visibility timeout passing on a queue whose visibility
// runs on real time (SQS), where a test cannot advance a clock instead.
//
// It has no effect unless a test wraps its ports; no production assembly
// imports it.
//
// It may import shared/assemble, shared/contracts and the standard library.
//
// # Usage
//
//	plan := &crashpoint.Plan{K: 7, Before: true}
//	h := enginetest.New(t, func(p *assemble.Ports) { *p = crashpoint.Wrap(*p, plan) })
//	...
//	if pt, ok := plan.Fired(); ok {
//		t.Logf("crashed before write %d: %s %s", pt.N, pt.Op, pt.Key)
//	}
package crashpoint
