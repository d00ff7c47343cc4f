// Package sqlite is cairn's embedded adapter: one SQLite file (pure Go,
// modernc.org/sqlite, no cgo) that implements every store port —
// contracts.JournalStore, TranscriptStore, StreamStore, EventLog, BlobStore
// and (Store.Workflows) WorkflowStore — and contracts.Queue with SQS FIFO
// semantics, for `cairn dev`, `make run` and the tests.
//
// It owns the schema (created idempotently on Open, versioned in PRAGMA
// user_version). The AWS assembly never imports it, so Lambda binaries do
// not link SQLite.
//
// It may import shared/contracts, the standard library and the SQLite
// driver (modernc.org/sqlite).
//
// The file runs in WAL mode with synchronous=NORMAL: readers never block the
// writer, and a committed write survives a process crash (a power loss may
// drop the last transactions, never corrupt the file). Records are JSON
// bodies beside the indexed columns their queries need. Every conditional
// write is one `UPDATE … WHERE id = ? AND version = ?`; multi-statement
// read-modify-writes (queue Send and Receive, schema creation) run in BEGIN
// IMMEDIATE transactions. Writers of one process take turns on an in-process
// slot; writers of several processes sharing the file are serialised by
// SQLite's lock and a 5 s busy timeout. So a Store is safe for concurrent use
// by many goroutines and several processes.
//
// Queue receipts are single-use per delivery: Delete or Release with a
// receipt from an earlier receive returns ErrNotFound and changes nothing. A
// dead-letter queue (a name ending in "-dlq") does not dead-letter further.
//
// # Usage
//
//	store, err := sqlite.Open(filepath.Join(dir, "cairn.db"), sqlite.Options{})
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//
//	gen := ids.New(clock)
//	sub, created, err := store.CreateSubmission(ctx, contracts.Submission{
//		ID: gen.New("sub"), SessionID: sessionID, IdempotencyKey: key,
//		Phase: contracts.PhaseAccepted, CreatedAt: now, UpdatedAt: now,
//	})
//	...
//	sub.Phase = contracts.PhaseModel
//	sub, err = store.UpdateSubmission(ctx, sub, sub.Version) // ErrConflict if someone moved first
//
//	err = store.Send(ctx, contracts.QueueModel, contracts.Message{...})
//	deliveries, err := store.Receive(ctx, contracts.QueueModel, 10, 30*time.Second)
package sqlite
