// Package repair is the one home of recovery: it finds stuck work and
// re-drives it, and turns dead-lettered messages into a visible FAILED
// state (docs/DESIGN.md §3). Everything that resumes work a dead process
// left lives here or in its sub-package recovery:
//
//   - recovery/ classifies an unfinished submission from its journal record
//     and what the stores hold (ClassifySubmission, pure) and reads that
//     evidence (Gather); it names the one action of each state.
//   - Repairer.Run, one pass (the `repair` function on AWS, Loop in `cairn
//     dev`): Submissions — a submission is stuck when its lease expired, or
//     when it holds no lease and has not moved for StuckAfter (30 s); repair
//     performs its state's action — then, with a Driver, the workflow runs:
//     a RUNNING run idle for a minute (DefaultRunStuckAfter) is woken (runs.go), a run whose
//     wake-up was dead-lettered ends FAILED poison.
//   - Repairer.Boot: the embedded backend's start, where this process owns
//     every lease, so foreign leases are broken and everything re-driven at
//     once.
//
// Repair never does a phase's work itself: it re-enqueues the phase's
// handler (which re-reads the journal and acts on what it says), starts a
// waiting submission, denies an approval whose time ran out, or fails a
// submission whose attempts are exhausted (or whose wake-up was
// dead-lettered) with a reason that starts with its state, e.g.
// "attempts_exhausted:MODEL step 3".
//
// It may import shared/contracts, shared/journal, shared/repair/recovery,
// shared/telemetry (a repair joins the turn's trace), shared/turn,
// shared/workflow, the OpenTelemetry API and the standard library.
//
// # Usage
//
//	r := &repair.Repairer{Engine: eng, Driver: drv, StuckAfter: time.Minute}
//	report, err := r.Run(ctx)             // one pass
//	go r.Loop(ctx, 5*time.Second)         // a pass every 5 s
//	err = r.Boot(ctx, owner, q.ReleaseInflight) // embedded start
package repair
