// Package contracts holds cairn's types, ports (interfaces) and sentinel
// errors: everything that crosses a package or process boundary.
//
// Read it in one sitting and you know every seam: the session spec and
// submission journal record (the turn's single source of truth), transcript
// nodes, tool calls and results, queue messages, events, workflows, and the
// ports of docs/DESIGN.md §8 that every adapter (embedded SQLite under
// shared/embedded, DynamoDB/S3/SQS under shared/aws, the sandboxes under
// shared/sandbox, the model providers under shared/model) pins itself to at
// compile time.
//
// It may import only the standard library.
//
// # Usage
//
//	var _ contracts.JournalStore = (*sqlite.Store)(nil)
//
//	sub, err := store.GetSubmission(ctx, id)
//	if errors.Is(err, contracts.ErrNotFound) { ... }
package contracts
