package sqlite

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

const insertEvents = `INSERT OR IGNORE INTO events (submission_id, seq, key, body) VALUES`

// AppendEvents appends e unless an event with its (SubmissionID, Key) exists.
// The store assigns Seq (rising within each submission, in the order
// given); e.Seq is ignored. Key is required.
func (s *Store) AppendEvents(ctx context.Context, evs ...contracts.Event) error {
	rows := make([][]any, len(evs))
	for i, e := range evs {
		if e.SubmissionID == "" || e.Key == "" {
			return fmt.Errorf("appending event %q of submission %q: empty submission id or key: %w",
				e.Key, e.SubmissionID, contracts.ErrInvalid)
		}
		e.Seq = 0
		b, err := jsonc.Marshal(e)
		if err != nil {
			return fmt.Errorf("appending event %s of submission %s: %w", e.Key, e.SubmissionID, err)
		}
		rows[i] = []any{e.SubmissionID, e.Key, b}
	}
	// Inside a batch they join its other events, one statement at its end
	// (batch.appendEvents).
	if b := s.batchOf(ctx); b != nil {
		b.events = append(b.events, rows...)
		return nil
	}
	if err := s.write(ctx, func(tx *writer) error { return insertEventRows(ctx, tx, rows) }); err != nil {
		if len(evs) == 1 {
			return fmt.Errorf("appending event %s of submission %s: %w", evs[0].Key, evs[0].SubmissionID, err)
		}
		return fmt.Errorf("appending %d events: %w", len(evs), err)
	}
	return nil
}

// insertEventRows inserts rows (submission id, key, body), in tx: each
// takes the next seq of its submission, in the order given — its max so
// far, read in this write, plus one per row — and a row whose key exists
// (stored, or earlier in rows) is skipped alone, its seq left unused (a
// gap: seqs only rise).
func insertEventRows(ctx context.Context, tx *writer, rows [][]any) error {
	next := map[string]int64{}
	seqd := make([][]any, len(rows))
	for i, r := range rows {
		sid := r[0].(string)
		seq, ok := next[sid]
		if !ok {
			row, err := tx.queryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events WHERE submission_id = ?`, sid)
			if err != nil {
				return err
			}
			if err := row.Scan(&seq); err != nil {
				return err
			}
		}
		seq++
		next[sid] = seq
		seqd[i] = []any{sid, seq, r[1], r[2]}
	}
	return tx.insertRows(ctx, insertEvents, seqd)
}

// ListEvents returns up to limit (≤ 0: all) events of the submission with
// Seq > after, in Seq order.
func (s *Store) ListEvents(ctx context.Context, submissionID string, after int64, limit int) ([]contracts.Event, error) {
	type row struct {
		seq  int64
		key  string
		body []byte
	}
	var got []row
	list := func(q querier) error {
		got = got[:0]
		rows, err := q.query(ctx, `SELECT seq, key, body FROM events
		WHERE submission_id = ? AND seq > ? ORDER BY seq LIMIT ?`, submissionID, after, limitArg(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.seq, &r.key, &r.body); err != nil {
				return err
			}
			got = append(got, r)
		}
		return rows.Err()
	}
	var err error
	if limit > 0 && limit <= hotEvents {
		err = s.hot(ctx, list) // a bounded page: short enough to hold the writer's slot
	} else {
		err = list(pool{s})
	}
	if err != nil {
		return nil, fmt.Errorf("listing events of submission %s: %w", submissionID, err)
	}
	var out []contracts.Event // decoded outside the slot
	for _, r := range got {
		var e contracts.Event
		if err := jsonc.Unmarshal(r.body, &e); err != nil {
			return nil, fmt.Errorf("decoding event %d of submission %s: %w", r.seq, submissionID, err)
		}
		e.Seq, e.Key = r.seq, r.key
		out = append(out, e)
	}
	return out, nil
}

// hotEvents bounds the page ListEvents reads on the writer's connection.
const hotEvents = 100
