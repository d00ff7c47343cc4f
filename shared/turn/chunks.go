package turn

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Chunk batching: a stream's text is written as text_delta events, one
// per flush carrying the text of every text chunk since the previous one —
// the events are the stream's text, not a copy of chunks stored beside
// them (what a finished stream must never be bought twice for is its
// completion marker, written by complete; an unfinished stream's text is
// discarded by the next attempt). Chunks that are not text (a tool call,
// usage) are stored as stream chunks. A flush happens when FlushEvery
// (Deps.FlushEvery) has passed since the last one or FlushChunks chunks
// are buffered, before a text chunk that would take the buffered text past
// Deps.FlushBytes, and always before the completion marker. A crash loses at
// most the unflushed tail of an incomplete stream, which recovery discards
// anyway (a new attempt, a new stream key).
const (
	FlushEvery  = 50 * time.Millisecond
	FlushChunks = 64
)

type chunkWriter struct {
	e      *Engine
	sub    contracts.Submission
	key    string
	next   int // seq of the first buffered stored chunk
	text   int // seq of the next text chunk (names its text_delta)
	chunks []contracts.ModelEvent
	events []contracts.Event
	n      int // chunks buffered since the last flush
	delta  int // JSON-encoded length of the last buffered text_delta's text
	last   time.Time
}

// keep is a copy of w's state that a batch undone can be restored to
// (write empties the buffers as it writes them).
func (w *chunkWriter) keep() chunkWriter {
	k := *w
	k.chunks, k.events = slices.Clone(w.chunks), slices.Clone(w.events)
	return k
}

func (w *chunkWriter) add(ctx context.Context, ev contracts.ModelEvent) error {
	size, limit := 0, w.e.FlushBytes
	if ev.Type == contracts.ModelText && limit > 0 { // unbounded (embedded): nothing to weigh
		size = JSONTextLen(ev.Text)
	}
	if n := len(w.events); size > 0 && n > 0 &&
		w.events[n-1].Type == contracts.EventTextDelta && w.delta+size > limit {
		if err := w.flush(ctx); err != nil { // this chunk would take the event past FlushBytes
			return err
		}
	}
	w.n++
	if ev.Type == contracts.ModelText {
		if ev.Text != "" {
			// one text_delta per flush: the text of every chunk in the batch
			if n := len(w.events); n > 0 && w.events[n-1].Type == contracts.EventTextDelta {
				w.events[n-1].Text += ev.Text
				w.delta += size
			} else {
				w.delta = size
				w.events = append(w.events, contracts.Event{SubmissionID: w.sub.ID, Key: fmt.Sprintf("text/%s/%d", w.key, w.text),
					Type: contracts.EventTextDelta, Step: w.sub.Step, Attempt: w.sub.Attempt, Text: ev.Text, At: w.e.now()})
			}
			w.text++
		}
	} else {
		w.chunks = append(w.chunks, ev)
	}
	if w.n >= FlushChunks || w.e.now().Sub(w.last) >= w.e.flushEvery() {
		return w.flush(ctx)
	}
	return nil
}

// flush writes the buffered chunks and text: one write where the store
// batches (Deps.Batch).
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
	w.n = 0
	w.last = w.e.now()
	return nil
}

// JSONTextLen is the length of s inside a JSON string as encoding/json
// writes it (HTML-safe): what a text_delta's text weighs in a stored
// record. Deps.FlushBytes bounds it.
func JSONTextLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6 // \u00XX
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6 // \ufffd, \u2028, \u2029
		} else {
			n += size
		}
		i += size
	}
	return n
}

func (e *Engine) flushEvery() time.Duration {
	if e.FlushEvery <= 0 {
		return FlushEvery
	}
	return e.FlushEvery
}
