// Package journal owns the turn's state machine rules on top of any
// contracts.JournalStore: (step, phase) only moves forward, every advance is
// one conditional write on version, and expensive work happens under a lease.
//
// Adapters are dumb conditional writers; the rules live here once, so the
// SQLite and DynamoDB backends cannot drift apart.
//
// It may import shared/contracts, shared/meter and the standard library.
//
// # Usage
//
//	sub, err = journal.Lease(ctx, store, sub, owner, now, ttl, nil) // ErrConflict: someone else holds it
//	next := sub
//	next.Phase = contracts.PhaseTools
//	sub, err = journal.Advance(ctx, store, sub, next, now)
package journal
