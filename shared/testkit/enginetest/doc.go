// Package enginetest is the shared test harness for cairn's engine: a whole
// embedded runtime (SQLite store, local sandboxes, the built-in tools and the
// scripted model) on a clock the test moves by hand.
//
// It owns ManualClock, the Harness that assembles an assemble.Runtime exactly
// as `cairn dev` would, but in a temporary directory with lease owner Owner
// and a logger that reports WARN and above through the test log, its API
// taking every request for User's (NewConfig: with a runtime configuration
// of the test's, e.g. how its API authenticates), and the helpers the engine's tests share: create sessions, accept prompts, drain
// the queues, read and rewrite submissions, render transcripts, lose or peek
// at queued messages and run a repair pass. Workflows (with the InProcess
// evaluator) serves workflows, with StartRun and EveryNodeOnce to drive and
// check a run; ModelTurn runs a model provider through the real engine, so a
// provider's tests assert the transcript, usage and attempts a user would
// see. A failing helper fails the test.
//
// It is for _test.go files only; no production package imports it.
//
// It may import shared/assemble, shared/console, shared/contracts, shared/embedded/sqlite,
// shared/ids, shared/mcp, shared/mcp/serve, shared/model/scripted, shared/repair,
// shared/sandbox/local, shared/secrets, shared/tools, shared/turn,
// shared/workflow/script and the standard library (testing included).
//
// # Usage
//
//	h := enginetest.New(t)
//	s := h.Session(contracts.SessionSpec{Model: "scripted:plain"})
//	sub := h.Submit(s.ID, "hello")
//	h.Drain()
//	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted { ... }
//	h.Clock.Advance(time.Minute)
package enginetest
