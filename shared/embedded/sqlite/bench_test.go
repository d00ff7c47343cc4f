package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
)

func BenchmarkUpdateSubmission(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(b.TempDir()+"/cairn.db", sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sub, _, err := s.CreateSubmission(ctx, contracts.Submission{
		ID: "sub", SessionID: "sess", Phase: contracts.PhaseModel, Prompt: "write a haiku about journals",
		ToolRequests: []contracts.ToolCall{{ID: "c1", Name: "bash", Input: []byte(`{"cmd":"ls -la"}`)}},
		CreatedAt:    time.Now(), UpdatedAt: time.Now(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		sub.Step++
		sub.UpdatedAt = time.Now()
		if sub, err = s.UpdateSubmission(ctx, sub, sub.Version); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueueSendReceiveDelete(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(b.TempDir()+"/cairn.db", sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m := contracts.Message{Kind: contracts.QueueModel, SessionID: "sess", SubmissionID: "sub", Step: i, Phase: contracts.PhaseModel, Version: int64(i)}
		if err := s.Send(ctx, contracts.QueueModel, m); err != nil {
			b.Fatal(err)
		}
		ds, err := s.Receive(ctx, contracts.QueueModel, 10, 30*time.Second)
		if err != nil || len(ds) != 1 {
			b.Fatalf("Receive = %d, %v", len(ds), err)
		}
		if err := s.Delete(ctx, contracts.QueueModel, ds[0].Receipt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStep approximates the store traffic of one agent step with one
// tool call: ~20 writes plus the reads the handlers make.
func BenchmarkStep(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(b.TempDir()+"/cairn.db", sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sub, _, err := s.CreateSubmission(ctx, contracts.Submission{ID: "sub", SessionID: "sess", Phase: contracts.PhaseModel})
	if err != nil {
		b.Fatal(err)
	}
	parent := ""
	b.ReportAllocs()
	step := 0
	for b.Loop() {
		step++
		key := fmt.Sprint("stream-", step)
		advance := func() {
			sub.UpdatedAt = time.Now()
			if sub, err = s.UpdateSubmission(ctx, sub, sub.Version); err != nil {
				b.Fatal(err)
			}
		}
		// model phase: receive, lease, stream, record, advance, enqueue
		must(b, s.Send(ctx, contracts.QueueModel, contracts.Message{Kind: "model", SessionID: "sess", SubmissionID: "sub", Step: step}))
		ds, err := s.Receive(ctx, contracts.QueueModel, 1, time.Minute)
		if err != nil || len(ds) != 1 {
			b.Fatal(len(ds), err)
		}
		sub, _ = s.GetSubmission(ctx, "sub")
		advance() // lease
		for i := range 8 {
			must(b, s.PutChunks(ctx, key, i, contracts.ModelEvent{Type: contracts.ModelText, Text: "token "}))
			must(b, s.AppendEvents(ctx, contracts.Event{SubmissionID: "sub", Key: fmt.Sprint(key, "/", i), Type: contracts.EventTextDelta, Text: "token "}))
		}
		_, err = s.Complete(ctx, key, contracts.ModelResponse{Text: "ok"})
		must(b, err)
		id := fmt.Sprint("node-", step)
		must(b, s.PutNode(ctx, contracts.Node{ID: id, Parent: parent, Role: contracts.RoleAssistant}))
		parent = id
		advance() // → TOOLS
		must(b, s.Delete(ctx, contracts.QueueModel, ds[0].Receipt))
		// tools phase
		must(b, s.MarkToolStarted(ctx, "sub", step, "call"))
		must(b, s.PutToolResult(ctx, "sub", step, contracts.ToolResult{CallID: "call", Content: "done"}))
		if _, err := s.ToolRecords(ctx, "sub", step); err != nil {
			b.Fatal(err)
		}
		advance() // → step+1, MODEL
	}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
