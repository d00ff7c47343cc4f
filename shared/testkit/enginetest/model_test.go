package enginetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// cutOnce breaks its first stream after one event, then plays scripted.
type cutOnce struct {
	inner *scripted.Client
	cut   bool
	keys  []string
}

func (c *cutOnce) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	c.keys = append(c.keys, req.StreamKey)
	if !c.cut {
		c.cut = true
		_ = emit(contracts.ModelEvent{Type: contracts.ModelText, Text: "half an ans"})
		return contracts.ModelResponse{}, errors.New("connection reset")
	}
	return c.inner.Stream(ctx, req, emit)
}

func TestTurnResumesABrokenStream(t *testing.T) {
	c := &cutOnce{inner: scripted.New()}
	res := enginetest.ModelTurn(t, c, "plain", "hi")
	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 1 {
		t.Fatalf("phase %s after %d failures", res.Sub.Phase, res.Failures)
	}
	if len(c.keys) != 2 || c.keys[0] == c.keys[1] {
		t.Fatalf("stream keys %v: the second attempt must use a new key", c.keys)
	}
	if want := "assistant: text=Hello from cairn's scripted model. You said: hi"; res.Transcript[1] != want {
		t.Fatalf("transcript %q", res.Transcript)
	}
}
