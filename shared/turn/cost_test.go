package turn_test

import (
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/pricing"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// TestTurnCost: the record carries its usage's estimated cost, updated in
// the same write as the usage, from the engine's price table.
func TestTurnCost(t *testing.T) {
	h := enginetest.New(t)
	// A dollar per token: the cost is the token count, to the cent.
	h.RT.Engine.Prices = &pricing.Table{Date: "test", Currency: "USD", Models: map[string]pricing.Price{"scripted:*": {InputPerMTok: 1e6, OutputPerMTok: 2e6}}}
	sub := h.Accept("scripted:demo")
	h.Drain()
	got := h.Get(sub.ID)
	if got.Phase != contracts.PhaseCommitted || got.Usage.InputTokens == 0 || got.Usage.OutputTokens == 0 {
		t.Fatalf("%s usage %+v", got.Phase, got.Usage)
	}
	want := float64(got.Usage.InputTokens + 2*got.Usage.OutputTokens)
	if got.Cost == nil || got.Cost.Model != want || got.Cost.Prices != "test" || got.Cost.Currency != "USD" {
		t.Fatalf("cost %+v, want %v USD for usage %+v", got.Cost, want, got.Usage)
	}
}
