// Package scripted is a deterministic ModelClient: named scenarios that
// answer, call tools (one or several per step) and ask for approval exactly
// the same way every time, streamed in chunks like a real provider. It is the
// default model for `make run` and for the tests.
//
// The model name selects the scenario (scenarios.go) and an optional
// per-chunk latency after an @, e.g. "kill@200ms":
//
//	plain     echoes the prompt, no tool call
//	demo      writes a note, lists the workspace, reads it back, runs a command
//	multi     several tool calls in one step
//	approval  one bash call (for tests of the ask policy)
//	loop      never stops calling tools: trips the step limit
//	shell     runs the prompt with the bash tool
//	workflow  fans out to three sub-agents with run_workflow
//	bench     one list_dir, then an answer: the benchmarks' agent step
//	kill      a mutating call and a slow one, then a long answer (the kill test)
//	bench-<answer>-<chunk>-<tool>
//	          the cost benchmark's sized step (sized.go): one bash call printing
//	          <tool> bytes, then an answer of <answer> bytes in ~<chunk>-byte
//	          chunks, e.g. "bench-4096-80-2048@60ms"
//
// The step is read from the transcript (assistant nodes since the last user
// node), so the client keeps no state between calls: any process replays it
// identically.
//
// It may import shared/contracts and the standard library.
//
// # Usage
//
//	m := scripted.New()
//	resp, err := m.Stream(ctx, contracts.ModelRequest{Model: "demo", Messages: path}, emit)
//	m.Calls() // model calls made, for tests asserting "once per step"
package scripted
