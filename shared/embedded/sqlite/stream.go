package sqlite

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// PutChunks stores evs as chunks first, first+1, … in one transaction,
// each unless it exists.
func (s *Store) PutChunks(ctx context.Context, key string, first int, evs ...contracts.ModelEvent) error {
	if key == "" {
		return fmt.Errorf("putting stream chunk %d: empty key: %w", first, contracts.ErrInvalid)
	}
	rows := make([][]any, len(evs))
	for i, ev := range evs {
		b, err := jsonc.Marshal(ev)
		if err != nil {
			return fmt.Errorf("putting stream chunk %s/%d: %w", key, first+i, err)
		}
		rows[i] = []any{key, first + i, b}
	}
	if err := s.insertRows(ctx, `INSERT OR IGNORE INTO stream_chunks (key, seq, body) VALUES`, rows); err != nil {
		return fmt.Errorf("putting stream chunks %s/%d..%d: %w", key, first, first+len(evs)-1, err)
	}
	return nil
}

// Complete stores the stream's completion marker unless one exists (the
// first completion wins) and returns the one stored: one statement, and a
// read only when an earlier completion won.
func (s *Store) Complete(ctx context.Context, key string, resp contracts.ModelResponse) (contracts.ModelResponse, error) {
	if key == "" {
		return resp, fmt.Errorf("completing stream: empty key: %w", contracts.ErrInvalid)
	}
	body, err := jsonc.Marshal(resp)
	if err != nil {
		return resp, fmt.Errorf("completing stream %s: %w", key, err)
	}
	res, err := s.exec(ctx, `INSERT OR IGNORE INTO stream_done (key, body) VALUES (?, ?)`, key, body)
	if err != nil {
		return resp, fmt.Errorf("completing stream %s: %w", key, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return resp, err
	}
	var won contracts.ModelResponse
	row, err := s.queryRow(ctx, `SELECT body FROM stream_done WHERE key = ?`, key)
	if err == nil {
		err = row.Scan(&body)
	}
	if err != nil {
		return resp, fmt.Errorf("reading the completion of stream %s: %w", key, err)
	}
	if err := jsonc.Unmarshal(body, &won); err != nil {
		return resp, fmt.Errorf("decoding completion of stream %s: %w", key, err)
	}
	return won, nil
}

// GetStream returns the stream's chunks in seq order and its completion
// marker, read in one statement (one snapshot); an unknown key is an empty
// Stream.
func (s *Store) GetStream(ctx context.Context, key string) (contracts.Stream, error) {
	rows, err := s.query(ctx, `SELECT 1, seq, body FROM stream_chunks WHERE key = ?
		UNION ALL SELECT 0, 0, body FROM stream_done WHERE key = ?
		ORDER BY 1, 2`, key, key)
	if err != nil {
		return contracts.Stream{}, fmt.Errorf("reading stream %s: %w", key, err)
	}
	defer rows.Close()
	var st contracts.Stream
	for rows.Next() {
		var chunk bool
		var seq int
		var body []byte
		if err := rows.Scan(&chunk, &seq, &body); err != nil {
			return contracts.Stream{}, fmt.Errorf("reading stream %s: %w", key, err)
		}
		if !chunk {
			st.Done = new(contracts.ModelResponse)
			if err := jsonc.Unmarshal(body, st.Done); err != nil {
				return contracts.Stream{}, fmt.Errorf("decoding completion of stream %s: %w", key, err)
			}
			continue
		}
		var ev contracts.ModelEvent
		if err := jsonc.Unmarshal(body, &ev); err != nil {
			return contracts.Stream{}, fmt.Errorf("decoding chunk %d of stream %s: %w", seq, key, err)
		}
		st.Chunks = append(st.Chunks, ev)
	}
	if err := rows.Err(); err != nil {
		return contracts.Stream{}, fmt.Errorf("reading stream %s: %w", key, err)
	}
	return st, nil
}
