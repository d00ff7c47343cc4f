package sqlite

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// The queue keeps SQS FIFO semantics in two tables: queue_messages (one row
// per undeleted message; a move to the DLQ rewrites its queue column) and
// queue_dedup (the last accepted send of each dedup id, which outlives the
// message so a duplicate of an already deleted message is still dropped).
//
// Receipts: every receive issues a fresh receipt and invalidates the
// previous one. Delete or Release with a receipt that is unknown, stale, or
// belongs to a message since moved to the DLQ returns ErrNotFound, which a
// caller acknowledging a message may ignore: someone else now owns it.

// dedupPruneEvery: one Send in this many also deletes expired dedup rows.
const dedupPruneEvery = 256

// Send enqueues m on queue, grouped by m.SessionID, unless a message with
// the same m.DedupID() was accepted on queue within the dedup window: then it
// is dropped and Send returns nil.
func (s *Store) Send(ctx context.Context, queue string, m contracts.Message) error {
	_, _, _, err := s.send(ctx, queue, m, -1, "", "")
	return err
}

var (
	_ contracts.Claimer   = (*Store)(nil)
	_ contracts.Forwarder = (*Store)(nil)
)

// SendClaimed is Send that hands the message to the sender as received
// (contracts.Claimer) when its group has nothing else on queue: one write
// instead of a send, a receive and its commit.
func (s *Store) SendClaimed(ctx context.Context, queue string, m contracts.Message, visibility time.Duration) (contracts.Delivery, bool, error) {
	d, ok, _, err := s.send(ctx, queue, m, max(visibility, 0), "", "")
	return d, ok, err
}

// Forward is SendClaimed that rewrites the row of the message in flight
// under receipt on from into m (contracts.Forwarder): one statement instead
// of a claimed insert and the delete of the message handled.
func (s *Store) Forward(ctx context.Context, from, receipt, queue string, m contracts.Message, visibility time.Duration) (contracts.Delivery, bool, bool, error) {
	return s.send(ctx, queue, m, max(visibility, 0), from, receipt)
}

// send is Send; with claim ≥ 0 SendClaimed for that visibility; with a
// receipt as well, Forward of the message holding it on from.
func (s *Store) send(ctx context.Context, queue string, m contracts.Message, claim time.Duration, from, receipt string) (contracts.Delivery, bool, bool, error) {
	var d contracts.Delivery
	if queue == "" || m.SessionID == "" {
		return d, false, false, fmt.Errorf("sending to queue %q: empty queue name or session id (group): %w", queue, contracts.ErrInvalid)
	}
	body, err := jsonc.Marshal(m)
	if err != nil {
		return d, false, false, fmt.Errorf("sending %s to queue %s: %w", m.DedupID(), queue, err)
	}
	now := nanos(s.opts.Clock.Now())
	cutoff := now - int64(s.opts.DedupWindow)
	prune := s.sends.Add(1)%dedupPruneEvery == 0
	claimed, consumed := false, false
	err = s.write(ctx, func(tx *writer) error {
		claimed, consumed = false, false
		dedup, err := tx.stmt(ctx, `INSERT INTO queue_dedup (queue, dedup_id, sent_at) VALUES (?, ?, ?)
			ON CONFLICT (queue, dedup_id) DO UPDATE SET sent_at = excluded.sent_at WHERE sent_at <= ?`)
		if err != nil {
			return err
		}
		res, err := dedup.ExecContext(quiet(ctx), queue, m.DedupID(), now, cutoff)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // duplicate within the window: accepted and dropped
		}
		if prune {
			if _, err := tx.exec(ctx, `DELETE FROM queue_dedup WHERE sent_at <= ?`, cutoff); err != nil {
				return err
			}
		}
		if claim >= 0 && receipt != "" {
			if d, consumed, err = s.forward(ctx, tx, from, receipt, queue, m, body, now, now+int64(claim)); err != nil || consumed {
				claimed = consumed
				return err
			}
		}
		if claim >= 0 {
			busy, err := tx.stmt(ctx, `SELECT EXISTS (SELECT 1 FROM queue_messages WHERE queue = ? AND group_id = ?)`)
			if err != nil {
				return err
			}
			var other bool
			if err := busy.QueryRowContext(quiet(ctx), queue, m.SessionID).Scan(&other); err != nil {
				return err
			}
			claimed = !other // FIFO: an earlier message of the group goes first
		}
		visible, count := now, 0
		if claimed {
			visible, count = now+int64(claim), 1
		}
		ins, err := tx.stmt(ctx, `INSERT INTO queue_messages
			(queue, group_id, body, sent_at, visible_at, receive_count, receipt)
			VALUES (?, ?, ?, ?, ?, ?, '')`)
		if err != nil {
			return err
		}
		res, err = ins.ExecContext(quiet(ctx), queue, m.SessionID, body, now, visible, count)
		if err != nil {
			return err
		}
		if claimed {
			id, err := res.LastInsertId()
			if err != nil {
				return err
			}
			d = contracts.Delivery{Message: m, ID: msgPrefix + strconv.FormatInt(id, 10), ReceiveCount: 1}
			d.Receipt = d.ID + ".1." + rand.Text()
			set, err := tx.stmt(ctx, `UPDATE queue_messages SET receipt = ? WHERE id = ?`)
			if err != nil {
				return err
			}
			if _, err := set.ExecContext(quiet(ctx), d.Receipt, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return contracts.Delivery{}, false, false, fmt.Errorf("sending %s to queue %s: %w", m.DedupID(), queue, err)
	}
	return d, claimed, consumed, nil
}

// forward rewrites the message in flight under receipt on from into m,
// in flight on queue until visible — when the receipt is current and no
// other message of m's group is on queue (FIFO: it would go first; the
// row keeps its id, older than any message the group has on queue since,
// so the group's order holds). ok false: nothing was changed.
func (s *Store) forward(ctx context.Context, tx *writer, from, receipt, queue string, m contracts.Message, body []byte, now, visible int64) (contracts.Delivery, bool, error) {
	id, valid := receiptRow(receipt)
	if !valid {
		return contracts.Delivery{}, false, nil
	}
	d := contracts.Delivery{Message: m, ID: msgPrefix + strconv.FormatInt(id, 10), ReceiveCount: 1}
	d.Receipt = d.ID + ".1." + rand.Text()
	st, err := tx.stmt(ctx, `UPDATE queue_messages
		SET queue = ?, group_id = ?, body = ?, sent_at = ?, visible_at = ?, receive_count = 1, receipt = ?
		WHERE id = ? AND queue = ? AND receipt = ?
		AND NOT EXISTS (SELECT 1 FROM queue_messages WHERE queue = ? AND group_id = ? AND id <> ?)`)
	if err != nil {
		return d, false, err
	}
	res, err := st.ExecContext(quiet(ctx), queue, m.SessionID, body, now, visible, d.Receipt,
		id, from, receipt, queue, m.SessionID, id)
	if err != nil {
		return d, false, err
	}
	n, _ := res.RowsAffected()
	return d, n == 1, nil
}

// Receive returns up to limit (≤ 0: 1) visible messages and hides each for
// visibility. Per group (session) only the oldest undeleted message is ever
// delivered, and not while it is in flight, so a group is processed in
// order. Before delivering, visible messages already received MaxReceives
// times are moved to DLQ(queue) with their receive count reset (a DLQ itself
// does not dead-letter further). Receive never blocks: with nothing visible
// it returns an empty slice. It is one BEGIN IMMEDIATE transaction, so
// concurrent receivers in any process never get the same message within one
// visibility window.
func (s *Store) Receive(ctx context.Context, queue string, limit int, visibility time.Duration) ([]contracts.Delivery, error) {
	limit = max(limit, 1)
	visibility = max(visibility, 0)
	now := nanos(s.opts.Clock.Now())
	out := []contracts.Delivery{}

	// Polling an idle queue must not take the write lock.
	row, err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queue_messages WHERE queue = ? AND visible_at <= ?)`, queue, now)
	if err != nil {
		return nil, fmt.Errorf("receiving from queue %s: %w", queue, err)
	}
	var ready bool
	if err := row.Scan(&ready); err != nil {
		return nil, fmt.Errorf("receiving from queue %s: %w", queue, err)
	}
	if !ready {
		return out, nil
	}

	dlq := !strings.HasSuffix(queue, contracts.DLQ(""))
	err = s.write(ctx, func(tx *writer) error {
		var ids []int64
		for pass := 0; ; pass++ {
			out, ids = out[:0], ids[:0]
			spent, err := s.heads(ctx, tx, queue, now, limit, &out, &ids)
			if err != nil {
				return err
			}
			// Dead-lettering is a write of its own, so it runs only when
			// a head is spent — then once, and the heads are read again
			// (the next message of such a group may be visible).
			if !spent || !dlq || pass > 0 {
				break
			}
			dl, err := tx.stmt(ctx, `UPDATE queue_messages
				SET queue = ?, visible_at = ?, receive_count = 0, receipt = ''
				WHERE queue = ? AND visible_at <= ? AND receive_count >= ?`)
			if err != nil {
				return err
			}
			if _, err := dl.ExecContext(quiet(ctx), contracts.DLQ(queue), now, queue, now, s.opts.MaxReceives); err != nil {
				return fmt.Errorf("dead-lettering: %w", err)
			}
		}
		upd, err := tx.stmt(ctx, `UPDATE queue_messages
			SET visible_at = ?, receive_count = ?, receipt = ? WHERE id = ?`)
		if err != nil {
			return err
		}
		until := now + int64(visibility)
		for i, id := range ids {
			if _, err := upd.ExecContext(quiet(ctx), until, out[i].ReceiveCount, out[i].Receipt, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("receiving from queue %s: %w", queue, err)
	}
	return out, nil
}

// heads reads up to limit visible oldest messages of their groups on queue
// into out (with the receipt each gets) and ids; spent: one of them was
// already received MaxReceives times (it is for the DLQ, not for a
// receiver).
func (s *Store) heads(ctx context.Context, tx *writer, queue string, now int64, limit int, out *[]contracts.Delivery, ids *[]int64) (spent bool, err error) {
	sel, err := tx.stmt(ctx, `SELECT id, body, receive_count FROM queue_messages
		WHERE queue = ? AND visible_at <= ?
		AND id IN (SELECT MIN(id) FROM queue_messages WHERE queue = ? GROUP BY group_id)
		ORDER BY id LIMIT ?`)
	if err != nil {
		return false, err
	}
	rows, err := sel.QueryContext(quiet(ctx), queue, now, queue, limit)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var body []byte
		var d contracts.Delivery
		if err := rows.Scan(&id, &body, &d.ReceiveCount); err != nil {
			return false, err
		}
		if d.ReceiveCount >= s.opts.MaxReceives {
			spent = true
		}
		if err := jsonc.Unmarshal(body, &d.Message); err != nil {
			return false, fmt.Errorf("decoding message %d: %w", id, err)
		}
		d.ID = msgPrefix + strconv.FormatInt(id, 10)
		d.ReceiveCount++
		d.Receipt = d.ID + "." + strconv.Itoa(d.ReceiveCount) + "." + rand.Text()
		*ids = append(*ids, id)
		*out = append(*out, d)
	}
	return spent, rows.Err()
}

// Delete acknowledges the message holding receipt; ErrNotFound if the
// receipt is not current (see the receipt rules above).
func (s *Store) Delete(ctx context.Context, queue string, receipt string) error {
	id, ok := receiptRow(receipt)
	if !ok {
		return fmt.Errorf("deleting message %s from queue %s: malformed receipt: %w", receipt, queue, contracts.ErrNotFound)
	}
	res, err := s.exec(ctx, `DELETE FROM queue_messages WHERE id = ? AND queue = ? AND receipt = ?`, id, queue, receipt)
	if err != nil {
		return fmt.Errorf("deleting message %s from queue %s: %w", receipt, queue, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("deleting message %s from queue %s: %w", receipt, queue, contracts.ErrNotFound)
	}
	return nil
}

// Release makes the in-flight message holding receipt visible now (a batch
// item failure); ErrNotFound if the receipt is not current.
func (s *Store) Release(ctx context.Context, queue string, receipt string) error {
	id, ok := receiptRow(receipt)
	if !ok {
		return fmt.Errorf("releasing message %s on queue %s: malformed receipt: %w", receipt, queue, contracts.ErrNotFound)
	}
	now := nanos(s.opts.Clock.Now())
	res, err := s.exec(ctx, `UPDATE queue_messages SET visible_at = MIN(visible_at, ?)
		WHERE id = ? AND queue = ? AND receipt = ?`, now, id, queue, receipt)
	if err != nil {
		return fmt.Errorf("releasing message %s on queue %s: %w", receipt, queue, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("releasing message %s on queue %s: %w", receipt, queue, contracts.ErrNotFound)
	}
	return nil
}

// msgPrefix starts every message id; a receipt is id.count.random.
const msgPrefix = "msg_"

// receiptRow extracts the row id from a receipt.
func receiptRow(receipt string) (int64, bool) {
	rest, ok := strings.CutPrefix(receipt, msgPrefix)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(num, 10, 64)
	return id, err == nil
}
