// Package contracts holds cairn's types, ports (interfaces) and sentinel
// errors: everything that crosses a package or process boundary.
//
// It imports only the standard library and nothing of cairn's. Read it in one
// sitting and you know every seam: the session spec and submission journal
// record (the turn's single source of truth), transcript nodes, tool calls and
// results, queue messages, events, and the ports of DESIGN §8 that every
// adapter (embedded SQLite, local sandbox, later DynamoDB/SQS/remote) pins
// itself to at compile time.
//
// # Usage
//
//	var _ contracts.JournalStore = (*sqlite.Store)(nil)
//
//	sub, err := store.GetSubmission(ctx, id)
//	if errors.Is(err, contracts.ErrNotFound) { ... }
package contracts
