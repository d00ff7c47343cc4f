package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"
)

// stmt returns the prepared statement for q, preparing it once per Store.
// database/sql re-prepares it transparently on each pooled connection.
func (s *Store) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if v, ok := s.stmts.Load(q); ok {
		return v.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("preparing statement: %w", err)
	}
	if v, loaded := s.stmts.LoadOrStore(q, st); loaded {
		st.Close()
		return v.(*sql.Stmt), nil
	}
	return st, nil
}

// lock takes this process's writer slot. Writers of one process queue here
// (cheaply, honouring ctx) instead of spinning in SQLite's busy handler;
// writers of other processes are serialised by SQLite's lock and
// busy_timeout.
func (s *Store) lock(ctx context.Context) error {
	select {
	case s.wsem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) unlock() { <-s.wsem }

// exec runs one write statement (atomic on its own) under the writer slot,
// or inside the caller's Batch.
func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if b := s.batchOf(ctx); b != nil {
		return b.w.exec(ctx, q, args...)
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	res, err := s.w.exec(ctx, q, args...)
	if err == nil {
		s.commits.Add(1)
	}
	return res, err
}

// rowsPerInsert bounds one multi-row INSERT (insertRows) well below
// SQLite's limit on bound variables.
const rowsPerInsert = 256

// insertRows runs head (an INSERT … VALUES without its tuples) for rows,
// each a tuple of the same width, as one statement per rowsPerInsert rows:
// a single statement is atomic on its own, so a batch needs no savepoint
// for it, and one statement costs less than a statement per row. More
// rows than that are one write (a savepoint inside a batch).
func (s *Store) insertRows(ctx context.Context, head string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if len(rows) <= rowsPerInsert {
		q, args := values(head, rows)
		_, err := s.exec(ctx, q, args...)
		return err
	}
	return s.write(ctx, func(tx *writer) error { return tx.insertRows(ctx, head, rows) })
}

// insertRows is Store.insertRows on tx, the write it is part of.
func (w *writer) insertRows(ctx context.Context, head string, rows [][]any) error {
	for len(rows) > 0 {
		n := min(len(rows), rowsPerInsert)
		q, args := values(head, rows[:n])
		if _, err := w.exec(ctx, q, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// values is head with a tuple of placeholders per row, and the rows'
// values in order.
func values(head string, rows [][]any) (string, []any) {
	var q strings.Builder
	q.WriteString(head)
	args := make([]any, 0, len(rows)*len(rows[0]))
	for i, r := range rows {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(" (?")
		q.WriteString(strings.Repeat(", ?", len(r)-1))
		q.WriteByte(')')
		args = append(args, r...)
	}
	return q.String(), args
}

// queryRow runs a read; WAL lets it proceed alongside a writer. Inside a
// Batch it reads through the batch's transaction, so it sees its writes.
func (s *Store) queryRow(ctx context.Context, q string, args ...any) (*sql.Row, error) {
	if b := s.batchOf(ctx); b != nil {
		return b.w.queryRow(ctx, q, args...)
	}
	st, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(quiet(ctx), args...), nil
}

// querier runs reads: the writer connection, or the pool's (pool).
type querier interface {
	queryRow(ctx context.Context, q string, args ...any) (*sql.Row, error)
	query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// pool runs reads on the pool's connections (Store.queryRow, Store.query).
type pool struct{ s *Store }

func (p pool) queryRow(ctx context.Context, q string, args ...any) (*sql.Row, error) {
	return p.s.queryRow(ctx, q, args...)
}

func (p pool) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return p.s.query(ctx, q, args...)
}

// hot runs fn, a short read (a row, a bounded page), on the writer
// connection when its slot is free at once, on the pool's otherwise (and
// inside a batch, on the batch's). The writer's page cache holds what this
// process wrote last, while a pool connection drops its whole cache
// whenever another connection has committed since its last read (WAL) and
// reads those pages again; fn must be done with its rows when it returns.
func (s *Store) hot(ctx context.Context, fn func(q querier) error) error {
	if b := s.batchOf(ctx); b != nil {
		return fn(b.w)
	}
	select {
	case s.wsem <- struct{}{}:
	default:
		return fn(pool{s})
	}
	gone := func(err error) bool { return errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) }
	err := func() error {
		defer s.unlock() // a panic in fn must not keep the writer's slot
		err := fn(s.w)
		if gone(err) {
			s.w.broken(ctx, err) // replaced for the next write
		}
		return err
	}()
	if gone(err) {
		return fn(pool{s}) // this read goes to the pool
	}
	return err
}

// hotRow scans the one row q(args) selects into dest: a short read (hot).
func (s *Store) hotRow(ctx context.Context, q string, args []any, dest ...any) error {
	return s.hot(ctx, func(r querier) error {
		row, err := r.queryRow(ctx, q, args...)
		if err != nil {
			return err
		}
		return row.Scan(dest...)
	})
}

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if b := s.batchOf(ctx); b != nil {
		return b.w.query(ctx, q, args...)
	}
	st, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(quiet(ctx), args...)
}

// write runs fn in a BEGIN IMMEDIATE transaction under the writer slot, so
// its reads and writes are one atomic step across goroutines and processes.
// Inside a Batch it is a savepoint of the batch's transaction: still all or
// nothing, committed with the batch.
func (s *Store) write(ctx context.Context, fn func(tx *writer) error) error {
	if b := s.batchOf(ctx); b != nil {
		return b.savepoint(ctx, fn)
	}
	return s.transact(ctx, fn)
}

// transact runs fn in a BEGIN IMMEDIATE transaction on the writer
// connection under the writer slot and commits it when fn returns nil; an
// error or a panic (which goes on) rolls it back. write and Batch are both
// one.
func (s *Store) transact(ctx context.Context, fn func(tx *writer) error) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if err := s.w.transact(ctx, fn); err != nil {
		return err
	}
	s.commits.Add(1)
	return nil
}

// nanos encodes a time for an indexed column; the zero time is 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// limitArg maps "no limit" (≤ 0) to SQLite's LIMIT -1.
func limitArg(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

// quiet is ctx without its cancellation, for the driver: modernc's sqlite
// starts a goroutine per statement to interrupt it if a cancellable context
// ends (and database/sql one per transaction), which cost more than the
// statements themselves. A statement here is short and bounded by
// busy_timeout; waiting for this process's writer slot (lock) still honours
// ctx.
func quiet(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
