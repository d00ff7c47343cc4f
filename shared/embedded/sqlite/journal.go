package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Records are stored as JSON bodies; the columns beside them exist only to
// index and to condition writes. Timestamps are the caller's, stored as
// RFC 3339 with nanoseconds, so they round-trip exactly.

// CreateSession stores s with Version 1, or returns ErrExists.
func (s *Store) CreateSession(ctx context.Context, sess contracts.Session) (contracts.Session, error) {
	if sess.ID == "" {
		return contracts.Session{}, fmt.Errorf("creating session: empty id: %w", contracts.ErrInvalid)
	}
	sess.Version = 1
	body, err := jsonc.Marshal(sess)
	if err != nil {
		return contracts.Session{}, fmt.Errorf("creating session %s: %w", sess.ID, err)
	}
	res, err := s.exec(ctx, `INSERT OR IGNORE INTO sessions (id, version, body) VALUES (?, ?, ?)`,
		sess.ID, sess.Version, body)
	if err != nil {
		return contracts.Session{}, fmt.Errorf("creating session %s: %w", sess.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return contracts.Session{}, fmt.Errorf("creating session %s: %w", sess.ID, contracts.ErrExists)
	}
	return sess, nil
}

// GetSession returns the session or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (contracts.Session, error) {
	var sess contracts.Session
	if err := s.getBody(ctx, &sess, `SELECT body FROM sessions WHERE id = ?`, id); err != nil {
		return contracts.Session{}, fmt.Errorf("getting session %s: %w", id, err)
	}
	return sess, nil
}

// UpdateSession writes sess with Version expected+1 if the stored version is
// expected; otherwise ErrConflict (ErrNotFound if absent).
func (s *Store) UpdateSession(ctx context.Context, sess contracts.Session, expected int64) (contracts.Session, error) {
	sess.Version = expected + 1
	body, err := jsonc.Marshal(sess)
	if err != nil {
		return contracts.Session{}, fmt.Errorf("updating session %s: %w", sess.ID, err)
	}
	res, err := s.exec(ctx, `UPDATE sessions SET version = ?, body = ? WHERE id = ? AND version = ?`,
		sess.Version, body, sess.ID, expected)
	if err != nil {
		return contracts.Session{}, fmt.Errorf("updating session %s: %w", sess.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return contracts.Session{}, fmt.Errorf("updating session %s at version %d: %w",
			sess.ID, expected, s.missOrConflict(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sess.ID))
	}
	return sess, nil
}

// ListSessions returns up to limit sessions (≤ 0: all), newest id first;
// only owner's when owner is not "" (the owner is read from the JSON body,
// so databases written before owners were filtered need no migration).
func (s *Store) ListSessions(ctx context.Context, owner string, limit int) ([]contracts.Session, error) {
	rows, err := s.query(ctx, `SELECT body FROM sessions
		WHERE ? = '' OR json_extract(CAST(body AS TEXT), '$.owner') = ?
		ORDER BY id DESC LIMIT ?`, owner, owner, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	out, err := scanBodies[contracts.Session](rows)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return out, nil
}

// CreateSubmission stores sub with Version 1. If a submission with the same
// (session, non-empty idempotency key) or the same id exists, it returns that
// one and created=false.
func (s *Store) CreateSubmission(ctx context.Context, sub contracts.Submission) (contracts.Submission, bool, error) {
	if sub.ID == "" || sub.SessionID == "" {
		return contracts.Submission{}, false, fmt.Errorf("creating submission: empty id or session id: %w", contracts.ErrInvalid)
	}
	sub.Version = 1
	body, err := jsonc.Marshal(sub)
	if err != nil {
		return contracts.Submission{}, false, fmt.Errorf("creating submission %s: %w", sub.ID, err)
	}
	res, err := s.exec(ctx, `INSERT OR IGNORE INTO submissions
		(id, session_id, idempotency_key, phase, version, updated_at, terminal, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		sub.ID, sub.SessionID, sub.IdempotencyKey, string(sub.Phase), sub.Version,
		nanos(sub.UpdatedAt), sub.Phase.Terminal(), body)
	if err != nil {
		return contracts.Submission{}, false, fmt.Errorf("creating submission %s: %w", sub.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return sub, true, nil
	}
	// Ignored: the key or the id is taken. Neither changes once written, so
	// reading outside the insert is safe.
	var existing contracts.Submission
	err = contracts.ErrNotFound
	if sub.IdempotencyKey != "" {
		err = s.getBody(ctx, &existing, `SELECT body FROM submissions
			WHERE session_id = ? AND idempotency_key = ?`, sub.SessionID, sub.IdempotencyKey)
	}
	if errors.Is(err, contracts.ErrNotFound) {
		err = s.getBody(ctx, &existing, `SELECT body FROM submissions WHERE id = ?`, sub.ID)
	}
	if err != nil {
		return contracts.Submission{}, false, fmt.Errorf("creating submission %s: reading existing: %w", sub.ID, err)
	}
	return existing, false, nil
}

// GetSubmission returns the submission or ErrNotFound.
func (s *Store) GetSubmission(ctx context.Context, id string) (contracts.Submission, error) {
	var sub contracts.Submission
	if err := s.getBody(ctx, &sub, `SELECT body FROM submissions WHERE id = ?`, id); err != nil {
		return contracts.Submission{}, fmt.Errorf("getting submission %s: %w", id, err)
	}
	return sub, nil
}

// SubmissionVersion is the stored version of submission id, its record
// neither read nor decoded (contracts.SubmissionVersioner).
func (s *Store) SubmissionVersion(ctx context.Context, id string) (int64, error) {
	var v int64
	err := s.hotRow(ctx, `SELECT version FROM submissions WHERE id = ?`, []any{id}, &v)
	if errors.Is(err, sql.ErrNoRows) {
		err = contracts.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("getting the version of submission %s: %w", id, err)
	}
	return v, nil
}

// UpdateSubmission writes sub with Version expected+1 if the stored version
// is expected; otherwise ErrConflict (ErrNotFound if absent). The session id
// and idempotency key are fixed at creation and not rewritten.
func (s *Store) UpdateSubmission(ctx context.Context, sub contracts.Submission, expected int64) (contracts.Submission, error) {
	sub.Version = expected + 1
	body, err := jsonc.Marshal(sub)
	if err != nil {
		return contracts.Submission{}, fmt.Errorf("updating submission %s: %w", sub.ID, err)
	}
	// A write that leaves terminal as it was does not name it: SQLite then
	// leaves submissions_open (WHERE terminal = 0) alone, one page fewer
	// per commit. An end sets it; so does a non-terminal write over an
	// ended record, found when the narrow write matches nothing.
	terminal := sub.Phase.Terminal()
	var n int64
	if !terminal {
		res, err := s.exec(ctx, `UPDATE submissions SET phase = ?, version = ?, updated_at = ?, body = ?
			WHERE id = ? AND version = ? AND terminal = 0`,
			string(sub.Phase), sub.Version, nanos(sub.UpdatedAt), body, sub.ID, expected)
		if err != nil {
			return contracts.Submission{}, fmt.Errorf("updating submission %s: %w", sub.ID, err)
		}
		n, _ = res.RowsAffected()
	}
	if n == 0 {
		res, err := s.exec(ctx, `UPDATE submissions SET phase = ?, version = ?, updated_at = ?, body = ?, terminal = ?
			WHERE id = ? AND version = ?`,
			string(sub.Phase), sub.Version, nanos(sub.UpdatedAt), body, terminal, sub.ID, expected)
		if err != nil {
			return contracts.Submission{}, fmt.Errorf("updating submission %s: %w", sub.ID, err)
		}
		n, _ = res.RowsAffected()
	}
	if n == 0 {
		return contracts.Submission{}, fmt.Errorf("updating submission %s at version %d: %w",
			sub.ID, expected, s.missOrConflict(ctx, `SELECT 1 FROM submissions WHERE id = ?`, sub.ID))
	}
	return sub, nil
}

// ListSubmissions returns a session's submissions ordered by id.
func (s *Store) ListSubmissions(ctx context.Context, sessionID string, phase contracts.Phase, limit int) ([]contracts.Submission, error) {
	// The waiting ones through their own index (the literal phase lets the
	// planner use it): the next waiting turn of a long session is found
	// without scanning the turns it already ran. Another phase is filtered
	// from the session's.
	q, args := `SELECT body FROM submissions WHERE session_id = ? ORDER BY id LIMIT ?`, []any{sessionID, limitArg(limit)}
	switch phase {
	case "":
	case contracts.PhaseAccepted:
		q = `SELECT body FROM submissions WHERE session_id = ? AND phase = 'ACCEPTED' ORDER BY id LIMIT ?`
	default:
		q, args = `SELECT body FROM submissions WHERE session_id = ? AND phase = ? ORDER BY id LIMIT ?`, []any{sessionID, phase, limitArg(limit)}
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing submissions of session %s: %w", sessionID, err)
	}
	out, err := scanBodies[contracts.Submission](rows)
	if err != nil {
		return nil, fmt.Errorf("listing submissions of session %s: %w", sessionID, err)
	}
	return out, nil
}

// ListUnfinished returns up to limit (≤ 0: all) non-terminal submissions,
// oldest UpdatedAt first.
func (s *Store) ListUnfinished(ctx context.Context, limit int) ([]contracts.Submission, error) {
	rows, err := s.query(ctx, `SELECT body FROM submissions WHERE terminal = 0
		ORDER BY updated_at, id LIMIT ?`, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing unfinished submissions: %w", err)
	}
	out, err := scanBodies[contracts.Submission](rows)
	if err != nil {
		return nil, fmt.Errorf("listing unfinished submissions: %w", err)
	}
	return out, nil
}

// getBody decodes the single JSON column of the row q(args) selects into v;
// ErrNotFound if there is no row.
func (s *Store) getBody(ctx context.Context, v any, q string, args ...any) error {
	var body []byte
	err := s.hotRow(ctx, q, args, &body)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return contracts.ErrNotFound
		}
		return err
	}
	if err := jsonc.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decoding stored record: %w", err)
	}
	return nil
}

// missOrConflict explains a conditional update that touched no row.
func (s *Store) missOrConflict(ctx context.Context, q string, id string) error {
	row, err := s.queryRow(ctx, q, id)
	if err != nil {
		return err
	}
	var one int
	switch err := row.Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return contracts.ErrNotFound
	case err != nil:
		return err
	}
	return contracts.ErrConflict
}

// scanBodies decodes every row's single JSON column and closes rows.
func scanBodies[T any](rows *sql.Rows) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		var v T
		if err := jsonc.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("decoding stored record: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
