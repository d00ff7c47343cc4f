package enginetest

import (
	"context"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/turn"
)

// ModelProvider is the name ModelTurn registers the client under test as.
const ModelProvider = "p"

// ModelResult is one finished turn of ModelTurn.
type ModelResult struct {
	Sub        contracts.Submission // the journal record, terminal
	Transcript []string             // Render of the session's path
	Events     []contracts.Event    // every event of the submission, in order
	// Failures counts handler runs that failed and were redelivered (a
	// broken stream is one; the next attempt streams under a new key).
	Failures int
	Harness  *Harness
}

// ModelTurn runs a model provider through the real engine (SQLite journal,
// local sandboxes, every built-in tool), so a provider's tests assert what
// a user sees: the transcript, the usage recorded in the journal, and how
// many attempts (stream keys) a step took. It creates a session whose
// model is ModelProvider+":"+model (all built-in
// tools, default policy), submits prompt and drives the queues until the
// submission ends. A handler failure leaves its message in flight; Turn then
// moves the manual clock past the lease and the visibility timeout, as time
// would, and drives again (bounded).
func ModelTurn(t testing.TB, client contracts.ModelClient, model, prompt string) ModelResult {
	t.Helper()
	h := New(t, func(p *assemble.Ports) { p.Models[ModelProvider] = client })
	s := h.Session(contracts.SessionSpec{Model: ModelProvider + ":" + model})
	sub := h.Submit(s.ID, prompt)
	res := ModelResult{Harness: h}
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
