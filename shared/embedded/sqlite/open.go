package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// schemaVersion is stored in PRAGMA user_version. Bump it (and add a
// migration step to migrate) whenever the schema changes incompatibly.
const schemaVersion = 4

// Options configures a Store. The zero value is usable.
type Options struct {
	// MaxReceives: a queue message received more than this many times is
	// moved to its queue's dead-letter queue (contracts.DLQ). Default 5.
	MaxReceives int
	// DedupWindow: a Send whose dedup id was sent to the same queue within
	// this window is dropped. Default 5m (the SQS FIFO window).
	DedupWindow time.Duration
	// Clock drives queue visibility and deduplication. Default: real time.
	Clock contracts.Clock
}

// Store is the embedded adapter for every store port and the queue, backed by
// one SQLite file. It is safe for concurrent use by many goroutines and by
// several processes opening the same file.
type Store struct {
	db    *sql.DB
	w     *writer // the one writing connection (writer.go), used under wsem
	opts  Options
	wsem  chan struct{} // serialises this process's writers (see write)
	stmts sync.Map      // query string → *sql.Stmt
	sends atomic.Uint64 // drives periodic pruning of the dedup table

	commits atomic.Uint64 // write transactions committed (Commits)
}

var (
	_ contracts.JournalStore    = (*Store)(nil)
	_ contracts.TranscriptStore = (*Store)(nil)
	_ contracts.StreamStore     = (*Store)(nil)
	_ contracts.EventLog        = (*Store)(nil)
	_ contracts.BlobStore       = (*Store)(nil)
	_ contracts.Queue           = (*Store)(nil)
)

// Open opens (creating if needed) the SQLite database at path, its parent
// directory included, and makes sure the schema exists.
func Open(path string, opts Options) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("opening sqlite store %q: %w", path, contracts.ErrInvalid)
	}
	if opts.MaxReceives <= 0 {
		opts.MaxReceives = 5
	}
	if opts.DedupWindow <= 0 {
		opts.DedupWindow = 5 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = contracts.WallClock{}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, err)
	}
	// busy_timeout makes writers of other processes wait for the lock;
	// _txlock=immediate makes every BeginTx a BEGIN IMMEDIATE, so a
	// read-modify-write transaction holds the write lock from its first read.
	dsn := path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0)) + 1 // the readers and the writer connection
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	w, err := openWriter(context.Background(), db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, err)
	}
	s := &Store{db: db, w: w, opts: opts, wsem: make(chan struct{}, 1)}
	if err := s.migrate(context.Background()); err != nil {
		w.close()
		db.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database. The Store must not be used afterwards.
func (s *Store) Close() error {
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	s.w.close()
	return s.db.Close()
}

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id         TEXT PRIMARY KEY,
	version    INTEGER NOT NULL,
	body       BLOB NOT NULL
);
-- submissions is keyed by its text id alone (WITHOUT ROWID, schema 4): an
-- accept dirties no separate primary-key index.
CREATE TABLE IF NOT EXISTS submissions (
	id              TEXT PRIMARY KEY,
	session_id      TEXT NOT NULL,
	idempotency_key TEXT NOT NULL,
	phase           TEXT NOT NULL,
	version         INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	terminal        INTEGER NOT NULL,
	body            BLOB NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS submissions_idem
	ON submissions (session_id, idempotency_key) WHERE idempotency_key != '';
CREATE INDEX IF NOT EXISTS submissions_session ON submissions (session_id, id);
-- Partial indexes whose keys never change while a row is in them: a
-- phase's write of its record (phase, version, updated_at) moves no index
-- entry. A submission is in submissions_waiting while ACCEPTED and in
-- submissions_open until it ends.
CREATE INDEX IF NOT EXISTS submissions_waiting ON submissions (session_id, id) WHERE phase = 'ACCEPTED';
CREATE INDEX IF NOT EXISTS submissions_open ON submissions (id) WHERE terminal = 0;
CREATE TABLE IF NOT EXISTS tool_records (
	submission_id TEXT NOT NULL,
	step          INTEGER NOT NULL,
	call_id       TEXT NOT NULL,
	started       INTEGER NOT NULL,
	result        BLOB,
	PRIMARY KEY (submission_id, step, call_id)
) WITHOUT ROWID;
-- nodes and stream_done are keyed by their text id alone (WITHOUT ROWID,
-- schema 3): one B-tree each, so a commit that writes one dirties one page
-- fewer than a rowid table and its primary-key index.
CREATE TABLE IF NOT EXISTS nodes (
	id     TEXT PRIMARY KEY,
	parent TEXT NOT NULL,
	body   BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS stream_chunks (
	key  TEXT NOT NULL,
	seq  INTEGER NOT NULL,
	body BLOB NOT NULL,
	PRIMARY KEY (key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS stream_done (
	key  TEXT PRIMARY KEY,
	body BLOB NOT NULL
) WITHOUT ROWID;
-- events are keyed by (submission, seq), seq rising within each
-- submission (schema 4; before, one sequence across submissions and an
-- index to list a submission's): a submission's events are one range of
-- the table, and an append dirties it and events_key.
CREATE TABLE IF NOT EXISTS events (
	submission_id TEXT NOT NULL,
	seq           INTEGER NOT NULL, -- rows are never deleted: the submission's max+1 always
	key           TEXT NOT NULL,
	body          BLOB NOT NULL,
	PRIMARY KEY (submission_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS events_key ON events (submission_id, key);
CREATE TABLE IF NOT EXISTS blobs (
	key  TEXT PRIMARY KEY,
	data BLOB NOT NULL
);
-- A message's id is its rowid (schema 4; AUTOINCREMENT before, which
-- wrote sqlite_sequence on every send): a new one is above every message
-- on the table, so the groups' order holds, and one deleted may come back
-- as a new message's id, which no receipt of the old one matches (a
-- receipt carries a random part).
CREATE TABLE IF NOT EXISTS queue_messages (
	id            INTEGER PRIMARY KEY,
	queue         TEXT NOT NULL,
	group_id      TEXT NOT NULL,
	body          BLOB NOT NULL,
	sent_at       INTEGER NOT NULL,
	visible_at    INTEGER NOT NULL,
	receive_count INTEGER NOT NULL,
	receipt       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS queue_groups ON queue_messages (queue, group_id, id);
CREATE TABLE IF NOT EXISTS queue_dedup (
	queue    TEXT NOT NULL,
	dedup_id TEXT NOT NULL,
	sent_at  INTEGER NOT NULL,
	PRIMARY KEY (queue, dedup_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS workflows (
	id   TEXT PRIMARY KEY,
	body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS workflow_runs (
	id          TEXT PRIMARY KEY,
	workflow_id TEXT NOT NULL, -- fixed at creation, like started_at
	version     INTEGER NOT NULL,
	status      TEXT NOT NULL,
	started_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	body        BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS workflow_runs_list ON workflow_runs (workflow_id, started_at, id);
CREATE INDEX IF NOT EXISTS workflow_runs_unfinished ON workflow_runs (status, updated_at, id);
CREATE TABLE IF NOT EXISTS workflow_nodes (
	run_id TEXT NOT NULL,
	id     TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	body   BLOB NOT NULL, -- the node without its result
	result BLOB,          -- set once: the first result wins
	PRIMARY KEY (run_id, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS workflow_nodes_seq ON workflow_nodes (run_id, seq, id);
CREATE TABLE IF NOT EXISTS schedules (
	id          TEXT PRIMARY KEY,
	workflow_id TEXT NOT NULL,
	body        BLOB NOT NULL
);
`

// rekeyed is a table a file made by an older schema may hold in another
// form: stale tells from its stored definition; def is the new one (what
// follows "CREATE TABLE name ("), from the columns its rows are copied
// from, in def's order.
type rekeyed struct {
	name, def, from string
	stale           func(ddl string) bool
}

func rowid(ddl string) bool { return !strings.Contains(strings.ToUpper(ddl), "WITHOUT ROWID") }

var rekeys = []rekeyed{
	{"nodes", "id TEXT PRIMARY KEY, parent TEXT NOT NULL, body BLOB NOT NULL) WITHOUT ROWID", "id, parent, body", rowid}, // 2 → 3
	{"stream_done", "key TEXT PRIMARY KEY, body BLOB NOT NULL) WITHOUT ROWID", "key, body", rowid},                       // 2 → 3
	{"submissions", `id TEXT PRIMARY KEY, session_id TEXT NOT NULL, idempotency_key TEXT NOT NULL, phase TEXT NOT NULL,
	version INTEGER NOT NULL, updated_at INTEGER NOT NULL, terminal INTEGER NOT NULL, body BLOB NOT NULL) WITHOUT ROWID`,
		"id, session_id, idempotency_key, phase, version, updated_at, terminal, body", rowid}, // 3 → 4
	{"events", `submission_id TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL, body BLOB NOT NULL,
	PRIMARY KEY (submission_id, seq)) WITHOUT ROWID`, "submission_id, seq, key, body", rowid}, // 3 → 4: the seqs kept rise within each submission
	{"queue_messages", `id INTEGER PRIMARY KEY, queue TEXT NOT NULL, group_id TEXT NOT NULL, body BLOB NOT NULL,
	sent_at INTEGER NOT NULL, visible_at INTEGER NOT NULL, receive_count INTEGER NOT NULL, receipt TEXT NOT NULL)`,
		"id, queue, group_id, body, sent_at, visible_at, receive_count, receipt",
		func(ddl string) bool { return strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT") }}, // 3 → 4
}

// rekey rebuilds each table a file made before holds in an older form
// (rekeys), its rows kept; the schema is then created again for the
// indexes that went with the old tables.
func rekey(ctx context.Context, tx *writer) error {
	rebuilt := false
	for _, t := range rekeys {
		var ddl string
		if err := tx.conn.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, t.name).Scan(&ddl); err != nil {
			return fmt.Errorf("reading the definition of %s: %w", t.name, err)
		}
		if !t.stale(ddl) {
			continue
		}
		if err := tx.script(ctx, fmt.Sprintf(`CREATE TABLE %[1]s_rekeyed (%[2]s;
INSERT INTO %[1]s_rekeyed (%[3]s) SELECT %[3]s FROM %[1]s;
DROP TABLE %[1]s;
ALTER TABLE %[1]s_rekeyed RENAME TO %[1]s`, t.name, t.def, t.from)); err != nil {
			return fmt.Errorf("rekeying %s: %w", t.name, err)
		}
		rebuilt = true
	}
	if rebuilt {
		if err := tx.script(ctx, schema); err != nil { // the rebuilt tables' indexes
			return fmt.Errorf("indexing the rekeyed tables: %w", err)
		}
	}
	return nil
}

// migrate creates the schema idempotently under the write lock, so several
// processes opening a fresh file at once do not race.
func (s *Store) migrate(ctx context.Context) error {
	return s.write(ctx, func(tx *writer) error {
		var v int
		if err := tx.conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("reading schema version: %w", err)
		}
		if v > schemaVersion {
			return fmt.Errorf("schema version %d is newer than supported %d: %w", v, schemaVersion, contracts.ErrInvalid)
		}
		if err := tx.script(ctx, schema); err != nil {
			return fmt.Errorf("creating schema: %w", err)
		}
		if v < 2 { // 1 → 2: the moving submission indexes gave way to submissions_waiting and submissions_open
			if err := tx.script(ctx, "DROP INDEX IF EXISTS submissions_phase; DROP INDEX IF EXISTS submissions_unfinished"); err != nil {
				return fmt.Errorf("migrating schema 1 → 2: %w", err)
			}
		}
		if err := rekey(ctx, tx); err != nil {
			return fmt.Errorf("migrating schema %d → %d: %w", v, schemaVersion, err)
		}
		if v < 4 { // 3 → 4: a submission's events are listed by their key
			if err := tx.script(ctx, "DROP INDEX IF EXISTS events_list"); err != nil {
				return fmt.Errorf("migrating schema %d → 4: %w", v, err)
			}
		}
		if v != schemaVersion {
			if err := tx.script(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
				return fmt.Errorf("writing schema version: %w", err)
			}
		}
		return nil
	})
}
