package sqlite

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// MarkToolStarted records that a call is about to run. Repeating it is
// harmless.
func (s *Store) MarkToolStarted(ctx context.Context, submissionID string, step int, callID string) error {
	if submissionID == "" || callID == "" {
		return fmt.Errorf("marking tool call %q started: empty id: %w", callID, contracts.ErrInvalid)
	}
	_, err := s.exec(ctx, `INSERT INTO tool_records (submission_id, step, call_id, started)
		VALUES (?, ?, ?, 1)
		ON CONFLICT (submission_id, step, call_id) DO UPDATE SET started = 1 WHERE started = 0`,
		submissionID, step, callID)
	if err != nil {
		return fmt.Errorf("marking tool call %s of submission %s step %d started: %w", callID, submissionID, step, err)
	}
	return nil
}

// PutToolResult records a call's result if it has none yet: the first
// result written wins and later ones are dropped without error.
func (s *Store) PutToolResult(ctx context.Context, submissionID string, step int, r contracts.ToolResult) error {
	if submissionID == "" || r.CallID == "" {
		return fmt.Errorf("putting tool result %q: empty id: %w", r.CallID, contracts.ErrInvalid)
	}
	body, err := jsonc.Marshal(r)
	if err != nil {
		return fmt.Errorf("putting tool result %s: %w", r.CallID, err)
	}
	_, err = s.exec(ctx, `INSERT INTO tool_records (submission_id, step, call_id, started, result)
		VALUES (?, ?, ?, 0, ?)
		ON CONFLICT (submission_id, step, call_id) DO UPDATE SET result = excluded.result
		WHERE result IS NULL`,
		submissionID, step, r.CallID, body)
	if err != nil {
		return fmt.Errorf("putting tool result %s of submission %s step %d: %w", r.CallID, submissionID, step, err)
	}
	return nil
}

// ToolRecords returns the step's records keyed by call id (empty map if
// none).
func (s *Store) ToolRecords(ctx context.Context, submissionID string, step int) (map[string]contracts.ToolRecord, error) {
	rows, err := s.query(ctx, `SELECT call_id, started, result FROM tool_records
		WHERE submission_id = ? AND step = ?`, submissionID, step)
	if err != nil {
		return nil, fmt.Errorf("reading tool records of submission %s step %d: %w", submissionID, step, err)
	}
	defer rows.Close()
	out := map[string]contracts.ToolRecord{}
	for rows.Next() {
		rec := contracts.ToolRecord{SubmissionID: submissionID, Step: step}
		var result []byte
		if err := rows.Scan(&rec.CallID, &rec.Started, &result); err != nil {
			return nil, fmt.Errorf("reading tool records of submission %s step %d: %w", submissionID, step, err)
		}
		if result != nil {
			rec.Result = new(contracts.ToolResult)
			if err := jsonc.Unmarshal(result, rec.Result); err != nil {
				return nil, fmt.Errorf("decoding tool result %s of submission %s: %w", rec.CallID, submissionID, err)
			}
		}
		out[rec.CallID] = rec
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading tool records of submission %s step %d: %w", submissionID, step, err)
	}
	return out, nil
}
