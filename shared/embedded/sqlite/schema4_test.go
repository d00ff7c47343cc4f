package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
)

// TestSchema4: submissions and events are keyed WITHOUT ROWID (events by
// submission and a seq rising within it, listed without an index of their
// own) and queue messages take their rowid without AUTOINCREMENT; a
// schema-3 file is rebuilt on open with every row kept, its indexes made
// again, and goes on from where it was: the next event of a submission
// follows its last, a duplicate key is still skipped, the message is still
// received and deleted.
func TestSchema4(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	// what schema 3 had of these tables, with rows (one sequence of
	// events across submissions)
	legacyFile(t, path,
		legacySubmissions,
		`CREATE UNIQUE INDEX submissions_idem ON submissions (session_id, idempotency_key) WHERE idempotency_key != ''`,
		`CREATE INDEX submissions_session ON submissions (session_id, id)`,
		`CREATE INDEX submissions_waiting ON submissions (session_id, id) WHERE phase = 'ACCEPTED'`,
		`CREATE INDEX submissions_open ON submissions (id) WHERE terminal = 0`,
		`INSERT INTO submissions VALUES ('sub-a', 'sess', 'key-a', 'ACCEPTED', 1, 1, 0, '{"id":"sub-a","session_id":"sess","idempotency_key":"key-a","phase":"ACCEPTED","version":1}')`,
		`CREATE TABLE events (seq INTEGER PRIMARY KEY, submission_id TEXT NOT NULL, key TEXT NOT NULL, body BLOB NOT NULL)`,
		`CREATE UNIQUE INDEX events_key ON events (submission_id, key)`,
		`CREATE INDEX events_list ON events (submission_id, seq)`,
		`INSERT INTO events VALUES (5, 'sub-a', 'step/0', '{"submission_id":"sub-a","type":"step","text":"first"}')`,
		`INSERT INTO events VALUES (7, 'sub-b', 'step/0', '{"submission_id":"sub-b","type":"step","text":"other"}')`,
		`INSERT INTO events VALUES (9, 'sub-a', 'step/1', '{"submission_id":"sub-a","type":"step","text":"second"}')`,
		`CREATE TABLE queue_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, group_id TEXT NOT NULL, body BLOB NOT NULL,
			sent_at INTEGER NOT NULL, visible_at INTEGER NOT NULL, receive_count INTEGER NOT NULL, receipt TEXT NOT NULL)`,
		`CREATE INDEX queue_groups ON queue_messages (queue, group_id, id)`,
		`INSERT INTO queue_messages VALUES (41, 'model', 'sess', '{"session_id":"sess","submission_id":"sub-a","kind":"model"}', 1, 1, 0, '')`,
		`PRAGMA user_version = 3`,
	)

	s := openAt(t, path, sqlite.Options{Clock: newManualClock()})
	db := plainDB(t, path)
	if v := userVersion(t, db); v != 4 {
		t.Fatalf("user_version %d, want 4", v)
	}
	ddl := func(table string) string { return strings.ToUpper(tableDDL(t, db, table)) }
	for _, table := range []string{"submissions", "events"} {
		if q := ddl(table); !strings.Contains(q, "WITHOUT ROWID") {
			t.Errorf("the migrated %s: %s", table, q)
		}
	}
	if q := ddl("queue_messages"); strings.Contains(q, "AUTOINCREMENT") {
		t.Errorf("the migrated queue_messages: %s", q)
	}
	var indexes []string
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		indexes = append(indexes, n)
	}
	rows.Close()
	got := strings.Join(indexes, " ")
	for _, want := range []string{"events_key", "queue_groups", "submissions_idem", "submissions_open", "submissions_session", "submissions_waiting"} {
		if !strings.Contains(got, want) {
			t.Errorf("index %s missing after the migration: %s", want, got)
		}
	}
	if strings.Contains(got, "events_list") {
		t.Errorf("events_list kept: %s", got)
	}

	// The rows, as they were.
	sub, err := s.GetSubmission(ctx, "sub-a")
	if err != nil || sub.IdempotencyKey != "key-a" {
		t.Fatalf("the migrated submission: %+v %v", sub, err)
	}
	if _, created, err := s.CreateSubmission(ctx, contracts.Submission{ID: "sub-dup", SessionID: "sess", IdempotencyKey: "key-a", Phase: contracts.PhaseAccepted}); err != nil || created {
		t.Errorf("a repeat of the migrated idempotency key created %v (%v): submissions_idem lost", created, err)
	}
	waiting, err := s.ListSubmissions(ctx, "sess", contracts.PhaseAccepted, 10)
	if err != nil || len(waiting) != 1 || waiting[0].ID != "sub-a" {
		t.Errorf("waiting after the migration: %+v %v", waiting, err)
	}
	if _, err := s.UpdateSubmission(ctx, sub, 1); err != nil {
		t.Errorf("updating the migrated submission: %v", err)
	}
	evs, err := s.ListEvents(ctx, "sub-a", 0, 0)
	if err != nil || len(evs) != 2 || evs[0].Seq != 5 || evs[1].Seq != 9 || evs[1].Text != "second" {
		t.Fatalf("the migrated events: %+v %v", evs, err)
	}
	if err := s.AppendEvents(ctx,
		contracts.Event{SubmissionID: "sub-a", Key: "step/1", Type: contracts.EventStep, Text: "again"}, // there: skipped
		contracts.Event{SubmissionID: "sub-a", Key: "step/2", Type: contracts.EventStep, Text: "third"},
		contracts.Event{SubmissionID: "sub-b", Key: "step/1", Type: contracts.EventStep, Text: "other's next"},
	); err != nil {
		t.Fatal(err)
	}
	after, err := s.ListEvents(ctx, "sub-a", 9, 10)
	if err != nil || len(after) != 1 || after[0].Seq <= 9 || after[0].Text != "third" {
		t.Errorf("sub-a after its last migrated event: %+v %v", after, err)
	}
	if b, err := s.ListEvents(ctx, "sub-b", 7, 10); err != nil || len(b) != 1 || b[0].Seq <= 7 || b[0].Text != "other's next" {
		t.Errorf("sub-b after its migrated event: %+v %v", b, err)
	}
	ds, err := s.Receive(ctx, "model", 10, time.Minute)
	if err != nil || len(ds) != 1 || ds[0].Message.SubmissionID != "sub-a" {
		t.Fatalf("the migrated message: %+v %v", ds, err)
	}
	if err := s.Delete(ctx, "model", ds[0].Receipt); err != nil {
		t.Errorf("deleting the migrated message: %v", err)
	}
}

// A new message's id is above every message on the queue, so a group's
// order holds without AUTOINCREMENT, and a receipt of a deleted message
// never acknowledges the new one that took its id.
func TestQueueIDsWithoutAutoincrement(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{Clock: newManualClock()})
	send := func(sub string) {
		t.Helper()
		if err := s.Send(ctx, "q", contracts.Message{SessionID: "sess", SubmissionID: sub, Kind: "model"}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() contracts.Delivery {
		t.Helper()
		ds, err := s.Receive(ctx, "q", 1, time.Minute)
		if err != nil || len(ds) != 1 {
			t.Fatalf("receive: %+v %v", ds, err)
		}
		return ds[0]
	}
	send("first")
	d1 := receive()
	if err := s.Delete(ctx, "q", d1.Receipt); err != nil {
		t.Fatal(err)
	}
	send("second") // the table was empty: it may take the deleted message's id
	send("third")
	d2 := receive()
	if d2.Message.SubmissionID != "second" {
		t.Fatalf("received %s first, want second (FIFO)", d2.Message.SubmissionID)
	}
	if err := s.Delete(ctx, "q", d1.Receipt); err == nil {
		t.Error("the deleted message's receipt acknowledged another message")
	}
	if err := s.Delete(ctx, "q", d2.Receipt); err != nil {
		t.Fatal(err)
	}
	if d3 := receive(); d3.Message.SubmissionID != "third" {
		t.Errorf("then %s, want third", d3.Message.SubmissionID)
	}
}

// legacySubmissions is the submissions table of schemas 1–3 (a rowid
// table).
const legacySubmissions = `CREATE TABLE submissions (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
	phase TEXT NOT NULL, version INTEGER NOT NULL, updated_at INTEGER NOT NULL, terminal INTEGER NOT NULL, body BLOB NOT NULL)`

// legacyFile makes the file at path as an older schema left it: qs run on
// a plain connection, which is closed before the store opens it.
func legacyFile(t *testing.T, path string, qs ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// plainDB opens the file at path on a plain connection, closed when the
// test ends, to look at what the store made of it.
func plainDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// userVersion is the file's schema version (PRAGMA user_version).
func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// tableDDL is the stored definition of table.
func tableDDL(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var q string
	if err := db.QueryRow(`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&q); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return q
}
