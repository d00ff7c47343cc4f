package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

var _ contracts.Batcher = (*Store)(nil)

type batchKey struct{}

// batch is one Batch's transaction, carried by the context its fn is given.
type batch struct {
	s      *Store
	w      *writer // the writer connection, in the batch's transaction
	events [][]any // the rows AppendEvents gave it, inserted as one statement before the commit
}

// batchOf returns the batch of this store that ctx is part of, if any.
func (s *Store) batchOf(ctx context.Context) *batch {
	b, _ := ctx.Value(batchKey{}).(*batch)
	if b == nil || b.s != s {
		return nil
	}
	return b
}

// Batch runs fn so that every read and write of this store made with the
// context fn is given is one transaction: committed once when fn returns
// nil, rolled back when it returns an error or panics (the panic goes on).
// Each write inside keeps its own all-or-nothing (a savepoint), so a
// conditional write that loses leaves the batch's other writes as they were
// and fn decides. A Batch inside a Batch of the same store is part of it.
// fn must not hand its context to goroutines that outlive it, and must not
// wait on anything slow: the batch holds this process's writer slot.
func (s *Store) Batch(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	if s.batchOf(ctx) != nil {
		return fn(ctx)
	}
	return s.transact(ctx, func(w *writer) error {
		b := &batch{s: s, w: w}
		ctx := context.WithValue(ctx, batchKey{}, b)
		if err := fn(ctx); err != nil {
			return err
		}
		return b.appendEvents(ctx)
	})
}

// appendEvents inserts the events the batch was given, in the order given
// (their seqs rise in that order, as appended one by one; a key already
// there, or earlier in the batch, is skipped alone): the batch's last
// statement before its commit, nothing inside the batch reads events.
func (b *batch) appendEvents(ctx context.Context) error {
	rows := b.events
	b.events = nil
	if len(rows) == 0 {
		return nil
	}
	if err := insertEventRows(ctx, b.w, rows); err != nil {
		return fmt.Errorf("appending %d events: %w", len(rows), err)
	}
	return nil
}

// savepoint runs fn as one all-or-nothing part of the batch. The three
// statements are prepared once, like every other (a batch runs several
// savepoints per phase: parsing them each time cost more than the commits
// the batch saves).
func (b *batch) savepoint(ctx context.Context, fn func(tx *writer) error) error {
	if err := b.run(ctx, "SAVEPOINT w"); err != nil {
		return fmt.Errorf("beginning savepoint: %w", err)
	}
	if err := fn(b.w); err != nil {
		rerr := b.run(ctx, "ROLLBACK TO w")
		xerr := b.run(ctx, "RELEASE w")
		return errors.Join(err, rerr, xerr)
	}
	if err := b.run(ctx, "RELEASE w"); err != nil {
		return fmt.Errorf("releasing savepoint: %w", err)
	}
	return nil
}

// run executes one cached statement in the batch's transaction.
func (b *batch) run(ctx context.Context, q string) error {
	_, err := b.w.exec(ctx, q)
	return err
}

// Commits counts the write transactions this store committed (a Batch is
// one): what a turn costs in commits, for benchmarks and the write-count
// test.
func (s *Store) Commits() uint64 { return s.commits.Load() }
