package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// PutBlob stores data under key unless the key exists (content-addressed:
// the first write wins).
func (s *Store) PutBlob(ctx context.Context, key string, data []byte) error {
	if key == "" {
		return fmt.Errorf("putting blob: empty key: %w", contracts.ErrInvalid)
	}
	if data == nil {
		data = []byte{}
	}
	if _, err := s.exec(ctx, `INSERT OR IGNORE INTO blobs (key, data) VALUES (?, ?)`, key, data); err != nil {
		return fmt.Errorf("putting blob %s: %w", key, err)
	}
	return nil
}

// GetBlob returns the blob or ErrNotFound.
func (s *Store) GetBlob(ctx context.Context, key string) ([]byte, error) {
	row, err := s.queryRow(ctx, `SELECT data FROM blobs WHERE key = ?`, key)
	if err != nil {
		return nil, fmt.Errorf("getting blob %s: %w", key, err)
	}
	data := []byte{}
	if err := row.Scan(&data); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("getting blob %s: %w", key, contracts.ErrNotFound)
		}
		return nil, fmt.Errorf("getting blob %s: %w", key, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}
