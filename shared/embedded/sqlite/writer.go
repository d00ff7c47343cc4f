package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// writer is this process's one writing connection. Every write runs on it,
// under the writer slot (lock), and a transaction is BEGIN IMMEDIATE …
// COMMIT as plain statements on it, its statements prepared once on it.
// database/sql's Tx would start a goroutine per transaction (to roll it
// back should its context end) and bind every statement to the
// transaction's connection again; a store's writes are serialised by the
// writer slot anyway, so one connection holds them all. Reads outside a
// batch go to the pool's other connections, alongside it (WAL) — a short
// one to this connection when its slot is free (Store.hot).
type writer struct {
	db      *sql.DB
	conn    *sql.Conn
	stmts   map[string]*sql.Stmt // query → statement prepared on conn; guarded by the writer slot
	inTx    bool                 // between BEGIN and its end (transact)
	aborted bool                 // the connection broke inside the transaction: every later statement of it fails
}

func openWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the writer connection: %w", err)
	}
	return &writer{db: db, conn: conn, stmts: map[string]*sql.Stmt{}}, nil
}

// stmt returns q prepared on the writer connection.
func (w *writer) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if w.aborted {
		return nil, fmt.Errorf("the writer connection broke inside this transaction: %w", sql.ErrConnDone)
	}
	if st, ok := w.stmts[q]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(quiet(ctx), q)
	if err != nil {
		return nil, fmt.Errorf("preparing statement: %w", w.broken(ctx, err))
	}
	w.stmts[q] = st
	return st, nil
}

// exec runs q (prepared once) with args.
func (w *writer) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(quiet(ctx), args...)
	return res, w.broken(ctx, err)
}

// queryRow runs the read q (prepared once) with args.
func (w *writer) queryRow(ctx context.Context, q string, args ...any) (*sql.Row, error) {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(quiet(ctx), args...), nil
}

// query runs the read q (prepared once) with args.
func (w *writer) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(quiet(ctx), args...)
	return rows, w.broken(ctx, err)
}

// script runs q unprepared: several statements (the schema), or one run
// once.
func (w *writer) script(ctx context.Context, q string) error {
	_, err := w.conn.ExecContext(quiet(ctx), q)
	return w.broken(ctx, err)
}

// transact runs fn between BEGIN IMMEDIATE and COMMIT; an error, a failed
// commit or a panic (which goes on) rolls back. The caller holds the
// writer slot.
func (w *writer) transact(ctx context.Context, fn func(w *writer) error) error {
	if _, err := w.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	w.inTx = true
	done := false
	defer func() {
		if !done {
			w.rollback(ctx) // fn panicked: nothing of it is written
		}
		w.end(ctx)
	}()
	ferr := fn(w)
	done = true
	if ferr != nil {
		w.rollback(ctx)
		return ferr
	}
	if _, err := w.exec(ctx, "COMMIT"); err != nil {
		w.rollback(ctx) // a commit that failed may leave the transaction open
		return fmt.Errorf("committing transaction: %w", err)
	}
	return nil
}

// end closes the transaction's span; a connection that broke inside it is
// replaced only now, so none of its later statements ran outside it.
func (w *writer) end(ctx context.Context) {
	w.inTx = false
	if w.aborted {
		w.aborted = false
		w.replace(ctx)
	}
}

// rollback ends the open transaction, if any: SQLite ends some on its own
// after an error, and then ROLLBACK has nothing to do (its error says so).
func (w *writer) rollback(ctx context.Context) {
	w.exec(ctx, "ROLLBACK")
}

// broken replaces a connection database/sql gave up on (it never comes
// back) with a fresh one, so one bad moment does not end the store's
// writes — inside a transaction only once it ended (end: until then its
// statements fail, none runs on its own); err is returned as it was.
func (w *writer) broken(ctx context.Context, err error) error {
	if err == nil || !(errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)) {
		return err
	}
	if w.inTx {
		w.aborted = true
		return err
	}
	w.replace(ctx)
	return err
}

func (w *writer) replace(ctx context.Context) {
	if conn, err := w.db.Conn(quiet(ctx)); err == nil {
		w.close()
		w.conn, w.stmts = conn, map[string]*sql.Stmt{}
	}
}

func (w *writer) close() error {
	for _, st := range w.stmts {
		st.Close()
	}
	return w.conn.Close()
}
