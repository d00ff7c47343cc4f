package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
)

func mustSub(t *testing.T, s *sqlite.Store, id string) contracts.Submission {
	t.Helper()
	sub, _, err := s.CreateSubmission(context.Background(), contracts.Submission{
		ID: id, SessionID: "sess", Phase: contracts.PhaseAccepted,
	})
	if err != nil {
		t.Fatalf("CreateSubmission: %v", err)
	}
	return sub
}

// TestTwoStoresOneFile: two Stores on one file (two processes' view) see
// each other's writes, and conditional writes and receives stay exclusive
// across them.
func TestTwoStoresOneFile(t *testing.T) {
	ctx := context.Background()
	clock := newManualClock()
	path := filepath.Join(t.TempDir(), "nested", "cairn.db")
	a := openAt(t, path, sqlite.Options{Clock: clock})
	b := openAt(t, path, sqlite.Options{Clock: clock})

	sub := mustSub(t, a, "sub-1")
	got, err := b.GetSubmission(ctx, "sub-1")
	if err != nil || got.Version != 1 {
		t.Fatalf("B GetSubmission = %+v, %v; want version 1", got, err)
	}
	if _, err := a.UpdateSubmission(ctx, sub, 1); err != nil {
		t.Fatalf("A UpdateSubmission: %v", err)
	}
	if _, err := b.UpdateSubmission(ctx, sub, 1); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("B stale UpdateSubmission: err = %v, want ErrConflict", err)
	}
	if _, err := b.UpdateSubmission(ctx, sub, 2); err != nil {
		t.Fatalf("B UpdateSubmission(2): %v", err)
	}
	if got, _ := a.GetSubmission(ctx, "sub-1"); got.Version != 3 {
		t.Fatalf("A sees version %d, want 3", got.Version)
	}

	// Racing writers split over both stores: exactly one wins.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			_, err := s.UpdateSubmission(ctx, sub, 3)
			switch {
			case err == nil:
				mu.Lock()
				wins++
				mu.Unlock()
			case !errors.Is(err, contracts.ErrConflict):
				t.Errorf("racing UpdateSubmission: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d racing writers won, want 1", wins)
	}

	// Queue: sent through A, received through B, invisible to A meanwhile,
	// and concurrent receivers on both stores never share a message.
	for i := range 40 {
		m := contracts.Message{Kind: contracts.QueueModel, SessionID: fmt.Sprint("s", i), SubmissionID: fmt.Sprint("sub", i)}
		if err := a.Send(ctx, contracts.QueueModel, m); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	seen := map[string]int{}
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			for {
				ds, err := s.Receive(ctx, contracts.QueueModel, 3, time.Minute)
				if err != nil {
					t.Errorf("Receive: %v", err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.ID]++
				}
				mu.Unlock()
				for _, d := range ds {
					other := b
					if s == b {
						other = a
					}
					if err := other.Delete(ctx, contracts.QueueModel, d.Receipt); err != nil {
						t.Errorf("Delete through the other store: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != 40 {
		t.Errorf("%d messages delivered, want 40", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s delivered %d times", id, n)
		}
	}
}

// TestMultiProcess runs real child processes that increment one submission's
// step through read-modify-conditional-write loops; no increment is lost.
func TestMultiProcess(t *testing.T) {
	if path := os.Getenv("CAIRN_SQLITE_CHILD_DB"); path != "" {
		childIncrement(t, path)
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "cairn.db")
	s := openAt(t, path, sqlite.Options{})
	mustSub(t, s, "counter")

	const children = 3
	errs := make(chan error, children)
	for range children {
		go func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMultiProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "CAIRN_SQLITE_CHILD_DB="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("child: %v\n%s", err, out)
			}
			errs <- err
		}()
	}
	for range children {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetSubmission(context.Background(), "counter")
	if err != nil {
		t.Fatalf("GetSubmission: %v", err)
	}
	if want := children * childIncrements; got.Step != want || got.Version != int64(want+1) {
		t.Errorf("step %d version %d, want step %d version %d", got.Step, got.Version, want, want+1)
	}
}

const childIncrements = 50

func childIncrement(t *testing.T, path string) {
	ctx := context.Background()
	s := openAt(t, path, sqlite.Options{})
	for range childIncrements {
		for {
			sub, err := s.GetSubmission(ctx, "counter")
			if err != nil {
				t.Fatalf("GetSubmission: %v", err)
			}
			sub.Step++
			if _, err := s.UpdateSubmission(ctx, sub, sub.Version); err == nil {
				break
			} else if !errors.Is(err, contracts.ErrConflict) {
				t.Fatalf("UpdateSubmission: %v", err)
			}
		}
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	mustSub(t, s, "sub-1")
	if err := s.PutBlob(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = openAt(t, path, sqlite.Options{})
	if _, err := s.GetSubmission(ctx, "sub-1"); err != nil {
		t.Errorf("GetSubmission after reopen: %v", err)
	}
	if b, err := s.GetBlob(ctx, "k"); err != nil || string(b) != "v" {
		t.Errorf("GetBlob after reopen = %q, %v", b, err)
	}
}

func TestOpenRejectsNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := sqlite.Open(path, sqlite.Options{}); !errors.Is(err, contracts.ErrInvalid) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open(newer schema): err = %v, want ErrInvalid", err)
	}
}

func TestQueueReceipts(t *testing.T) {
	ctx := context.Background()
	clock := newManualClock()
	s := open(t, sqlite.Options{Clock: clock})
	q := contracts.QueueTools
	m := contracts.Message{Kind: q, SessionID: "s", SubmissionID: "sub"}
	if err := s.Send(ctx, q, m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	first, err := s.Receive(ctx, q, 0, time.Second) // limit 0 means 1
	if err != nil || len(first) != 1 {
		t.Fatalf("Receive = %v, %v", first, err)
	}
	clock.Advance(2 * time.Second)
	second, err := s.Receive(ctx, q, 1, time.Second)
	if err != nil || len(second) != 1 {
		t.Fatalf("Receive again = %v, %v", second, err)
	}
	for name, op := range map[string]func(context.Context, string, string) error{"Delete": s.Delete, "Release": s.Release} {
		if err := op(ctx, q, first[0].Receipt); !errors.Is(err, contracts.ErrNotFound) {
			t.Errorf("%s(stale receipt): err = %v, want ErrNotFound", name, err)
		}
		if err := op(ctx, q, ""); !errors.Is(err, contracts.ErrNotFound) {
			t.Errorf("%s(empty receipt): err = %v, want ErrNotFound", name, err)
		}
		if err := op(ctx, contracts.QueueCommit, second[0].Receipt); !errors.Is(err, contracts.ErrNotFound) {
			t.Errorf("%s(receipt of another queue): err = %v, want ErrNotFound", name, err)
		}
	}
	if err := s.Delete(ctx, q, second[0].Receipt); err != nil {
		t.Errorf("Delete(current receipt): %v", err)
	}
}

func TestQueueSendInvalid(t *testing.T) {
	s := fresh(t)
	for name, q := range map[string]string{"no group": contracts.QueueModel, "no queue": ""} {
		m := contracts.Message{Kind: "model", SubmissionID: "sub"}
		if q == "" {
			m.SessionID = "s"
		}
		if err := s.Send(context.Background(), q, m); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("Send(%s): err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestDLQDoesNotDeadLetter(t *testing.T) {
	ctx := context.Background()
	s := open(t, sqlite.Options{Clock: newManualClock(), MaxReceives: 1})
	dlq := contracts.DLQ(contracts.QueueModel)
	if err := s.Send(ctx, dlq, contracts.Message{Kind: "model", SessionID: "s", SubmissionID: "sub"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	for i := 1; i <= 3; i++ {
		ds, err := s.Receive(ctx, dlq, 1, time.Minute)
		if err != nil || len(ds) != 1 || ds[0].ReceiveCount != i {
			t.Fatalf("receive %d from DLQ = %+v, %v", i, ds, err)
		}
		if err := s.Release(ctx, dlq, ds[0].Receipt); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
}

func TestOpenInvalidPath(t *testing.T) {
	for _, p := range []string{"", "a?b.db"} {
		if _, err := sqlite.Open(p, sqlite.Options{}); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("Open(%q): err = %v, want ErrInvalid", p, err)
		}
	}
}

// TestLongPath crosses Path's per-query chunk, including a missing ancestor
// exactly at a chunk boundary.
func TestLongPath(t *testing.T) {
	ctx := context.Background()
	s := fresh(t)
	put := func(prefix string, n int, rootParent string) string {
		parent := rootParent
		for i := range n {
			id := fmt.Sprintf("%s-%05d", prefix, i)
			if err := s.PutNode(ctx, contracts.Node{ID: id, Parent: parent, Role: contracts.RoleUser}); err != nil {
				t.Fatalf("PutNode: %v", err)
			}
			parent = id
		}
		return parent
	}
	leaf := put("long", 2100, "")
	path, err := s.Path(ctx, leaf)
	if err != nil {
		t.Fatalf("Path: %v", err)
	}
	if len(path) != 2100 || path[0].ID != "long-00000" || path[2099].ID != leaf {
		t.Fatalf("Path returned %d nodes (%s … %s)", len(path), path[0].ID, path[len(path)-1].ID)
	}
	for i := 1; i < len(path); i++ {
		if path[i].Parent != path[i-1].ID {
			t.Fatalf("path[%d].Parent = %s, want %s", i, path[i].Parent, path[i-1].ID)
		}
	}
	for _, n := range []int{1023, 1024, 1025, 2048} {
		orphan := put(fmt.Sprint("orphan", n), n, "gone")
		if _, err := s.Path(ctx, orphan); !errors.Is(err, contracts.ErrNotFound) {
			t.Errorf("Path(%d nodes below a missing root): err = %v, want ErrNotFound", n, err)
		}
	}
}

// TestSubmissionIndexesDoNotMove: the queries that find a session's next
// waiting turn and the unfinished turns read partial indexes whose keys a
// phase's write never changes (schema 2), and a schema-1 file migrates:
// its moving indexes are dropped, its rows kept.
func TestSubmissionIndexesDoNotMove(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	// what schema 1 had of submissions, with one row
	legacyFile(t, path,
		legacySubmissions,
		`CREATE INDEX submissions_phase ON submissions (session_id, phase, id)`,
		`CREATE INDEX submissions_unfinished ON submissions (updated_at, id) WHERE terminal = 0`,
		`INSERT INTO submissions VALUES ('sub-old', 'sess', '', 'ACCEPTED', 1, 1, 0, '{"id":"sub-old","session_id":"sess","phase":"ACCEPTED","version":1}')`,
		`PRAGMA user_version = 1`,
	)
	s := openAt(t, path, sqlite.Options{})
	waiting, err := s.ListSubmissions(ctx, "sess", contracts.PhaseAccepted, 1)
	if err != nil || len(waiting) != 1 || waiting[0].ID != "sub-old" {
		t.Fatalf("the migrated file's waiting turn: %v %v", waiting, err)
	}
	db := plainDB(t, path)
	if v := userVersion(t, db); v != 4 {
		t.Fatalf("user_version %d, want 4", v)
	}
	var old int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('submissions_phase', 'submissions_unfinished')`).Scan(&old); err != nil || old != 0 {
		t.Fatalf("%d schema-1 indexes left (%v)", old, err)
	}
	for q, want := range map[string]string{
		`SELECT body FROM submissions WHERE session_id = 'sess' AND phase = 'ACCEPTED' ORDER BY id LIMIT 1`: "submissions_waiting",
		`SELECT body FROM submissions WHERE terminal = 0 ORDER BY updated_at, id LIMIT 10`:                  "submissions_open",
	} {
		rows, err := db.Query("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			t.Fatal(err)
		}
		plan := ""
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan += detail + "; "
		}
		rows.Close()
		if !strings.Contains(plan, want) {
			t.Errorf("%s: plan %q, want it to use %s", q, plan, want)
		}
	}
}

// TestRekeyedTables: schema 3 keys nodes and stream_done by their text id
// alone (WITHOUT ROWID), and a schema-2 file, whose tables are rowid
// tables, is rebuilt on open with its rows kept.
func TestRekeyedTables(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	node := contracts.Node{ID: "n1", SessionID: "sess", Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "hello"}}}
	if err := s.PutNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, "stream-1", contracts.ModelResponse{Text: "answer"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := plainDB(t, path)
	ddl := func(table string) string { return tableDDL(t, db, table) }
	for _, table := range []string{"nodes", "stream_done"} {
		if q := ddl(table); !strings.Contains(q, "WITHOUT ROWID") {
			t.Fatalf("a new file's %s: %s", table, q)
		}
	}
	// what schema 2 had: the same tables as rowid tables
	for _, q := range []string{
		`CREATE TABLE nodes_v2 (id TEXT PRIMARY KEY, parent TEXT NOT NULL, body BLOB NOT NULL)`,
		`INSERT INTO nodes_v2 SELECT * FROM nodes`, `DROP TABLE nodes`, `ALTER TABLE nodes_v2 RENAME TO nodes`,
		`CREATE TABLE stream_done_v2 (key TEXT PRIMARY KEY, body BLOB NOT NULL)`,
		`INSERT INTO stream_done_v2 SELECT * FROM stream_done`, `DROP TABLE stream_done`, `ALTER TABLE stream_done_v2 RENAME TO stream_done`,
		`PRAGMA user_version = 2`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if q := ddl("nodes"); strings.Contains(q, "WITHOUT ROWID") {
		t.Fatalf("the schema-2 nodes: %s", q)
	}
	s = openAt(t, path, sqlite.Options{})
	for _, table := range []string{"nodes", "stream_done"} {
		if q := ddl(table); !strings.Contains(q, "WITHOUT ROWID") {
			t.Errorf("the migrated %s: %s", table, q)
		}
	}
	if v := userVersion(t, db); v != 4 {
		t.Errorf("user_version %d, want 4", v)
	}
	got, err := s.GetNode(ctx, "n1")
	if err != nil || len(got.Blocks) != 1 || got.Blocks[0].Text != "hello" {
		t.Errorf("the migrated node: %+v %v", got, err)
	}
	st, err := s.GetStream(ctx, "stream-1")
	if err != nil || st.Done == nil || st.Done.Text != "answer" {
		t.Errorf("the migrated completion: %+v %v", st, err)
	}
}

// TestTerminalFollowsThePhase: a write that leaves a submission's
// terminal flag as it was does not name it (submissions_open is left
// alone); one that ends the turn takes it out of the unfinished, and one
// that brings an ended record back puts it in again.
func TestTerminalFollowsThePhase(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	sub := mustSub(t, s, "sub-t")
	unfinished := func() bool {
		t.Helper()
		subs, err := s.ListUnfinished(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(subs) == 1 && subs[0].ID == sub.ID && subs[0].Phase == sub.Phase
	}
	for _, phase := range []contracts.Phase{contracts.PhaseModel, contracts.PhaseCommitted, contracts.PhaseCommitted, contracts.PhaseModel} {
		next := sub
		next.Phase = phase
		got, err := s.UpdateSubmission(ctx, next, sub.Version)
		if err != nil {
			t.Fatalf("to %s: %v", phase, err)
		}
		sub = got
		if want := !phase.Terminal(); unfinished() != want {
			t.Fatalf("after the write to %s, unfinished %v, want %v", phase, !want, want)
		}
	}
	if _, err := s.UpdateSubmission(ctx, sub, sub.Version-1); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("a stale write: %v, want ErrConflict", err)
	}
}

// TestBatchEventsAreOneInsert: the events a batch is given by several
// appends go in at its end, in the order given — a key given twice kept
// once, seqs rising — and a batch undone leaves none.
func TestBatchEventsAreOneInsert(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	ev := func(key string) contracts.Event {
		return contracts.Event{SubmissionID: "sub-e", Key: key, Type: contracts.EventStep, Text: key}
	}
	if err := s.AppendEvents(ctx, ev("before")); err != nil {
		t.Fatal(err)
	}
	err := s.Batch(ctx, func(ctx context.Context) error {
		if err := s.AppendEvents(ctx, ev("a"), ev("b")); err != nil {
			return err
		}
		if err := s.AppendEvents(ctx, ev("before"), ev("c"), ev("a")); err != nil {
			return err
		}
		return s.AppendEvents(ctx, ev("d"))
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("undone")
	if err := s.Batch(ctx, func(ctx context.Context) error {
		if err := s.AppendEvents(ctx, ev("e")); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("the undone batch: %v", err)
	}
	evs, err := s.ListEvents(ctx, "sub-e", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i, e := range evs {
		keys = append(keys, e.Key)
		if e.Text != e.Key || i > 0 && e.Seq <= evs[i-1].Seq {
			t.Errorf("event %d: %+v after seq %d", i, e, evs[max(i-1, 0)].Seq)
		}
	}
	if got := strings.Join(keys, " "); got != "before a b c d" {
		t.Fatalf("events %q, want %q", got, "before a b c d")
	}
}
