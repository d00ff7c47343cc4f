// Package workflow drives workflow runs (docs/DESIGN.md §7): a run's script
// is evaluated — always in an isolate, never in this process — against the
// node results known so far; every node it starts becomes a child turn in a
// session of its own, created if absent; a child's end records the node's
// result (first wins) and wakes the run; the run ends with the script's
// value or failure, and wakes the tool call waiting for it, if any.
//
// Every step is a create-if-absent write under a deterministic id (node ids
// from the run and the call's position, child sessions from the node,
// child submissions by idempotency key), so a crashed or duplicated
// evaluation repeats harmlessly: each node runs exactly once. A run whose
// wake-up never came (its creator died before sending it, or it was lost)
// is found by the repair pass (shared/repair), which wakes every RUNNING run
// that has not moved for a while with a RepairNonce wake-up, and fails a
// run whose wake-up was dead-lettered (Fail).
//
// A run is one trace: a start span, an evaluation span per wake-up; its
// node turns are traces of their own linked to the evaluation that started
// them (trace.go).
//
// It may import shared/contracts, shared/ids, shared/telemetry (a run's
// trace), shared/turn, the OpenTelemetry API and the standard library.
//
// # Usage
//
//	d := &workflow.Driver{Store: store, Engine: engine, Eval: &isolate.Runner{…}}
//	run, err := d.Start(ctx, contracts.WorkflowRun{ID: id, WorkflowID: wf.ID, Script: wf.Script, Input: in})
//	err = d.Handle(ctx, msg) // the workflow queue's handler
package workflow
