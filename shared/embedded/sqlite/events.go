package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// AppendEvent appends e unless an event with its (SubmissionID, Key) exists.
// The store assigns Seq (one increasing sequence across submissions, so
// strictly increasing within each); e.Seq is ignored. Key is required.
func (s *Store) AppendEvents(ctx context.Context, evs ...contracts.Event) error {
	bodies := make([][]byte, len(evs))
	for i, e := range evs {
		if e.SubmissionID == "" || e.Key == "" {
			return fmt.Errorf("appending event %q of submission %q: empty submission id or key: %w",
				e.Key, e.SubmissionID, contracts.ErrInvalid)
		}
		e.Seq = 0
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("appending event %s of submission %s: %w", e.Key, e.SubmissionID, err)
		}
		bodies[i] = b
	}
	const q = `INSERT OR IGNORE INTO events (submission_id, key, body) VALUES (?, ?, ?)`
	if len(evs) == 1 {
		if _, err := s.exec(ctx, q, evs[0].SubmissionID, evs[0].Key, bodies[0]); err != nil {
			return fmt.Errorf("appending event %s of submission %s: %w", evs[0].Key, evs[0].SubmissionID, err)
		}
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		st, err := s.txStmt(ctx, tx, q)
		if err != nil {
			return err
		}
		for i, e := range evs {
			if _, err := st.ExecContext(quiet(ctx), e.SubmissionID, e.Key, bodies[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("appending %d events: %w", len(evs), err)
	}
	return nil
}

// ListEvents returns up to limit (≤ 0: all) events of the submission with
// Seq > after, in Seq order.
func (s *Store) ListEvents(ctx context.Context, submissionID string, after int64, limit int) ([]contracts.Event, error) {
	rows, err := s.query(ctx, `SELECT seq, key, body FROM events
		WHERE submission_id = ? AND seq > ? ORDER BY seq LIMIT ?`, submissionID, after, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing events of submission %s: %w", submissionID, err)
	}
	defer rows.Close()
	var out []contracts.Event
	for rows.Next() {
		var seq int64
		var key string
		var body []byte
		if err := rows.Scan(&seq, &key, &body); err != nil {
			return nil, fmt.Errorf("listing events of submission %s: %w", submissionID, err)
		}
		var e contracts.Event
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, fmt.Errorf("decoding event %d of submission %s: %w", seq, submissionID, err)
		}
		e.Seq, e.Key = seq, key
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing events of submission %s: %w", submissionID, err)
	}
	return out, nil
}
