// Package scripted is a deterministic ModelClient: named scenarios that
// answer, call tools (one or several per step) and ask for approval exactly
// the same way every time, streamed in chunks like a real provider. It is the
// default model for `make run` and for the tests.
//
// The model name selects the scenario and an optional per-chunk latency:
// "demo", "plain", "multi", "approval", "loop", "shell" (runs the prompt
// with the bash tool), "kill@200ms". The step is
// read from the transcript (assistant nodes since the last user node), so the
// client keeps no state between calls: any process replays it identically.
//
// # Usage
//
//	m := scripted.New()
//	resp, err := m.Stream(ctx, contracts.ModelRequest{Model: "demo", Messages: path}, emit)
//	m.Calls() // model calls made, for tests asserting "once per step"
package scripted
