// Package modeltest runs a model provider through the real engine (SQLite
// journal, local sandboxes, every built-in tool) so a provider's tests
// assert what a user sees: the transcript, the usage recorded in the
// journal, and how many attempts (stream keys) a step took. Tests only.
//
// # Usage
//
//	res := modeltest.Turn(t, client, "claude-x", "hello")
//	res.Sub.Phase == contracts.PhaseCommitted
//	res.Transcript // enginetest.Render lines
package modeltest

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

// Provider is the name the client under test is registered as.
const Provider = "p"

// Result is one finished turn.
type Result struct {
	Sub        contracts.Submission // the journal record, terminal
	Transcript []string             // enginetest.Render of the session's path
	Events     []contracts.Event    // every event of the submission, in order
	// Failures counts handler runs that failed and were redelivered (a
	// broken stream is one; the next attempt streams under a new key).
	Failures int
	Harness  *enginetest.Harness
}

// Turn creates a session whose model is Provider+":"+model (all built-in
// tools, default policy), submits prompt and drives the queues until the
// submission ends. A handler failure leaves its message in flight; Turn then
// moves the manual clock past the lease and the visibility timeout, as time
// would, and drives again (bounded).
func Turn(t testing.TB, client contracts.ModelClient, model, prompt string) Result {
	t.Helper()
	h := enginetest.New(t, func(p *assemble.Ports) { p.Models[Provider] = client })
	s := h.Session(contracts.SessionSpec{Model: Provider + ":" + model})
	sub := h.Submit(s.ID, prompt)
	res := Result{Harness: h}
	for round := 0; ; round++ {
		h.Drain()
		res.Sub = h.Get(sub.ID)
		if res.Sub.Phase.Terminal() || round == 10 {
			break
		}
		res.Failures++
		h.Clock.Advance(turn.DefaultLeaseTTL + time.Minute)
	}
	if !res.Sub.Phase.Terminal() {
		t.Fatalf("submission stuck in %s after 10 redeliveries", res.Sub.Phase)
	}
	res.Transcript = h.Transcript(s.ID)
	evs, err := h.Store.ListEvents(context.Background(), sub.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	res.Events = evs
	return res
}
