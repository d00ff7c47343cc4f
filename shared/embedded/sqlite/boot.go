package sqlite

import (
	"context"
	"fmt"
)

// ReleaseInflight makes every in-flight queue message visible now. Only the
// single owner of the data directory calls it, at boot: whoever received
// those messages was a previous process that died, and on a FIFO queue an
// in-flight message would otherwise block its session's group until its
// visibility timeout. The receive count is kept, so a message that keeps
// killing its handler still reaches the dead-letter queue.
func (s *Store) ReleaseInflight(ctx context.Context) error {
	now := nanos(s.opts.Clock.Now())
	if _, err := s.exec(ctx, `UPDATE queue_messages SET visible_at = ? WHERE visible_at > ? AND receive_count > 0`, now, now); err != nil {
		return fmt.Errorf("releasing in-flight queue messages: %w", err)
	}
	return nil
}
