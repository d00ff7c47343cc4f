package turn

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Chunk batching: stream chunks and their text_delta event (one per batch,
// carrying the batch's text) are written in batches, flushed when FlushEvery has passed since the last flush or
// FlushChunks are buffered, and always before the completion marker. A
// crash loses at most the unflushed tail of an incomplete stream, which
// recovery discards anyway (a new attempt, a new stream key).
const (
	FlushEvery  = 50 * time.Millisecond
	FlushChunks = 64
)

type chunkWriter struct {
	e      *Engine
	sub    contracts.Submission
	key    string
	next   int // seq of the first buffered chunk
	chunks []contracts.ModelEvent
	events []contracts.Event
	last   time.Time
}

func (w *chunkWriter) add(ctx context.Context, ev contracts.ModelEvent) error {
	seq := w.next + len(w.chunks)
	w.chunks = append(w.chunks, ev)
	if ev.Type == contracts.ModelText && ev.Text != "" {
		// one text_delta per flush: the text of every chunk in the batch
		if n := len(w.events); n > 0 && w.events[n-1].Type == contracts.EventTextDelta {
			w.events[n-1].Text += ev.Text
		} else {
			w.events = append(w.events, contracts.Event{SubmissionID: w.sub.ID, Key: fmt.Sprintf("text/%s/%d", w.key, seq),
				Type: contracts.EventTextDelta, Step: w.sub.Step, Attempt: w.sub.Attempt, Text: ev.Text, At: w.e.now()})
		}
	}
	if len(w.chunks) >= FlushChunks || w.e.now().Sub(w.last) >= FlushEvery {
		return w.flush(ctx)
	}
	return nil
}

// flush writes the buffered chunks and their text_delta: one write where
// the store batches (Deps.Batch).
func (w *chunkWriter) flush(ctx context.Context) error {
	if len(w.chunks) == 0 && len(w.events) == 0 {
		w.last = w.e.now()
		return nil
	}
	return w.e.batch(ctx, w.write)
}

func (w *chunkWriter) write(ctx context.Context) error {
	if len(w.chunks) > 0 {
		if err := w.e.Streams.PutChunks(ctx, w.key, w.next, w.chunks...); err != nil {
			return fmt.Errorf("writing chunks %d.. of stream %s: %w", w.next, w.key, err)
		}
		w.next += len(w.chunks)
		w.chunks = w.chunks[:0]
	}
	if len(w.events) > 0 {
		for i := range w.events {
			if w.events[i].At.IsZero() {
				w.events[i].At = w.e.now()
			}
		}
		if err := w.e.Events.AppendEvents(ctx, w.events...); err != nil {
			return fmt.Errorf("appending stream events of submission %s: %w", w.sub.ID, err)
		}
		w.events = w.events[:0]
	}
	w.last = w.e.now()
	return nil
}
