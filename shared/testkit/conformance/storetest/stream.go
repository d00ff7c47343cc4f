package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// RunStream checks a StreamStore: create-if-absent chunks on (key, seq),
// first completion wins, ordered reads, and empty reads of unknown keys.
func RunStream(t *testing.T, newStore func(t *testing.T) contracts.StreamStore) {
	run(t, newStore, []subtest[contracts.StreamStore]{
		{"Unknown", testStreamUnknown},
		{"ChunksInOrder", testStreamChunks},
		{"CompleteFirstWins", testStreamComplete},
		{"KeysIsolated", testStreamKeys},
	})
}

func text(s string) contracts.ModelEvent {
	return contracts.ModelEvent{Type: contracts.ModelText, Text: s}
}

func testStreamUnknown(t *testing.T, s contracts.StreamStore) {
	got, err := s.GetStream(context.Background(), uniq(t))
	if err != nil {
		t.Fatalf("GetStream(unknown): %v", err)
	}
	if len(got.Chunks) != 0 || got.Done != nil {
		t.Errorf("GetStream(unknown) = %+v, want empty", got)
	}
}

func testStreamChunks(t *testing.T, s contracts.StreamStore) {
	ctx := context.Background()
	key := uniq(t)
	chunks := []contracts.ModelEvent{
		text("Hel"),
		text("lo"),
		{Type: contracts.ModelToolCall, ToolCall: &contracts.ToolCall{ID: "c1", Name: "grep", Input: []byte(`{"q":"x"}`)}},
		{Type: contracts.ModelUsage, Usage: &contracts.Usage{InputTokens: 3, OutputTokens: 4}},
	}
	for _, seq := range []int{2, 0, 3, 1} { // out of order
		if err := s.PutChunks(ctx, key, seq, chunks[seq]); err != nil {
			t.Fatalf("PutChunks(%d): %v", seq, err)
		}
	}
	if err := s.PutChunks(ctx, key, 1, text("REWRITTEN")); err != nil {
		t.Fatalf("PutChunks(existing seq): err = %v, want nil (no-op)", err)
	}
	got, err := s.GetStream(ctx, key)
	if err != nil {
		t.Fatalf("GetStream: %v", err)
	}
	if !reflect.DeepEqual(got.Chunks, chunks) {
		t.Errorf("chunks:\n got %+v\nwant %+v", got.Chunks, chunks)
	}
	if got.Done != nil {
		t.Errorf("Done = %+v before Complete, want nil", got.Done)
	}
}

func testStreamComplete(t *testing.T, s contracts.StreamStore) {
	ctx := context.Background()
	key := uniq(t)
	if err := s.PutChunks(ctx, key, 0, text("hi")); err != nil {
		t.Fatalf("PutChunk: %v", err)
	}
	first := contracts.ModelResponse{
		Text:       "hi",
		ToolCalls:  []contracts.ToolCall{{ID: "c1", Name: "bash", Input: []byte(`{"cmd":"ls"}`)}},
		StopReason: "tool_use",
		Usage:      contracts.Usage{InputTokens: 1, OutputTokens: 2},
	}
	if won, err := s.Complete(ctx, key, first); err != nil || !reflect.DeepEqual(won, first) {
		t.Fatalf("Complete = %+v, %v; want %+v (this call's)", won, err, first)
	}
	// A second completion stores nothing and returns the first one.
	if won, err := s.Complete(ctx, key, contracts.ModelResponse{Text: "second"}); err != nil || !reflect.DeepEqual(won, first) {
		t.Fatalf("Complete(again) = %+v, %v; want the first completion %+v", won, err, first)
	}
	got, err := s.GetStream(ctx, key)
	if err != nil {
		t.Fatalf("GetStream: %v", err)
	}
	if got.Done == nil || !reflect.DeepEqual(*got.Done, first) {
		t.Errorf("Done = %+v, want %+v", got.Done, first)
	}
	if len(got.Chunks) != 1 || got.Chunks[0].Text != "hi" {
		t.Errorf("Chunks = %+v, want [hi]", got.Chunks)
	}
	// A completion without chunks is a complete, empty stream.
	empty := uniq(t) + "-empty"
	if _, err := s.Complete(ctx, empty, contracts.ModelResponse{StopReason: "end_turn"}); err != nil {
		t.Fatalf("Complete(no chunks): %v", err)
	}
	if got, err := s.GetStream(ctx, empty); err != nil || got.Done == nil || len(got.Chunks) != 0 {
		t.Errorf("GetStream(completed, no chunks) = %+v, %v", got, err)
	}
}

func testStreamKeys(t *testing.T, s contracts.StreamStore) {
	ctx := context.Background()
	p := uniq(t)
	if err := s.PutChunks(ctx, p+"-a", 0, text("a")); err != nil {
		t.Fatalf("PutChunks(a): %v", err)
	}
	if err := s.PutChunks(ctx, p+"-b", 0, text("b")); err != nil {
		t.Fatalf("PutChunks(b): %v", err)
	}
	if _, err := s.Complete(ctx, p+"-a", contracts.ModelResponse{Text: "a"}); err != nil {
		t.Fatalf("Complete(a): %v", err)
	}
	got, err := s.GetStream(ctx, p+"-b")
	if err != nil {
		t.Fatalf("GetStream(b): %v", err)
	}
	if len(got.Chunks) != 1 || got.Chunks[0].Text != "b" || got.Done != nil {
		t.Errorf("GetStream(b) = %+v, want one chunk b and no completion", got)
	}
}
