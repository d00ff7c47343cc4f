package placement_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

func rec(id string) *contracts.SandboxRecord {
	return &contracts.SandboxRecord{Kind: "process", ID: id, Endpoint: "http://127.0.0.1:1", TokenRef: "ref-" + id,
		Fingerprint: "fp", StartedAt: time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)}
}

func TestRecordSetsAndClears(t *testing.T) {
	ctx := context.Background()
	m := newMem("s")
	s, err := placement.Record(ctx, m, "s", rec("a"))
	if err != nil || !placement.Same(s.Sandbox, rec("a")) || s.Version != 2 {
		t.Fatalf("set: %v %+v", err, s)
	}
	// Recording the same placement again writes nothing.
	if _, err := placement.Record(ctx, m, "s", rec("a")); err != nil || m.updates != 1 {
		t.Fatalf("repeat: %v, %d updates", err, m.updates)
	}
	s, err = placement.Record(ctx, m, "s", nil)
	if err != nil || s.Sandbox != nil {
		t.Fatalf("clear: %v %+v", err, s.Sandbox)
	}
	if _, err := placement.Record(ctx, m, "nope", rec("a")); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}
}

// A concurrent writer moving other fields makes the conditional update
// conflict; Record re-reads and keeps that writer's change.
func TestRecordRetriesConflict(t *testing.T) {
	ctx := context.Background()
	m := newMem("s")
	moves := 2
	m.before = func(s *contracts.Session) {
		if moves > 0 {
			moves--
			s.Head = "node_by_other_writer"
			s.Version++
		}
	}
	s, err := placement.Record(ctx, m, "s", rec("a"))
	if err != nil {
		t.Fatal(err)
	}
	if m.updates != 3 || s.Head != "node_by_other_writer" || !placement.Same(s.Sandbox, rec("a")) {
		t.Fatalf("after %d updates: %+v", m.updates, s)
	}
}

func TestRecordGivesUp(t *testing.T) {
	m := newMem("s")
	m.before = func(s *contracts.Session) { s.Version++ } // always moved
	_, err := placement.Record(context.Background(), m, "s", rec("a"))
	if !errors.Is(err, contracts.ErrConflict) || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("err = %v, want ErrConflict after bounded retries", err)
	}
	if m.updates > 10 {
		t.Fatalf("%d updates: unbounded", m.updates)
	}
}

func TestReplace(t *testing.T) {
	ctx := context.Background()
	m := newMem("s")
	if _, err := placement.Replace(ctx, m, "s", nil, rec("a")); err != nil {
		t.Fatal(err)
	}
	// Another process expected no record: it lost, and learns the winner.
	s, err := placement.Replace(ctx, m, "s", nil, rec("b"))
	if !errors.Is(err, contracts.ErrConflict) || !placement.Same(s.Sandbox, rec("a")) {
		t.Fatalf("loser: %v, %+v", err, s.Sandbox)
	}
	if _, err := placement.Replace(ctx, m, "s", rec("a"), rec("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := placement.Replace(ctx, m, "s", rec("a"), rec("c")); err != nil {
		t.Fatalf("already replaced by the same record: %v", err)
	}
	if s, err := placement.Replace(ctx, m, "s", rec("c"), nil); err != nil || s.Sandbox != nil {
		t.Fatalf("clear: %v", err)
	}
}

// The real journal: the record round-trips (StartedAt with nanoseconds) and
// a conflict from a concurrent session write is retried.
func TestRecordSQLite(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateSession(ctx, contracts.Session{ID: "ses_1"}); err != nil {
		t.Fatal(err)
	}
	racer := &racingStore{Store: st, moves: 1}
	s, err := placement.Record(ctx, racer, "ses_1", rec("a"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetSession(ctx, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	if !placement.Same(got.Sandbox, rec("a")) || got.Active != "sub_other" || got.Version != s.Version || got.Version != 3 {
		t.Fatalf("stored %+v (record %+v), want the record and the other writer's Active at version 3", got, got.Sandbox)
	}
	// Replace expecting nothing loses to the stored record.
	if _, err := placement.Replace(ctx, st, "ses_1", nil, rec("b")); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("replace over a record: %v", err)
	}
	if _, err := placement.Record(ctx, st, "ses_1", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetSession(ctx, "ses_1"); got.Sandbox != nil {
		t.Fatalf("record not cleared: %+v", got.Sandbox)
	}
}

// racingStore lets another writer (the turn engine claiming the session)
// move the session between Record's read and its write, moves times.
type racingStore struct {
	*sqlite.Store
	moves int
}

func (r *racingStore) UpdateSession(ctx context.Context, s contracts.Session, expected int64) (contracts.Session, error) {
	if r.moves > 0 {
		r.moves--
		cur, err := r.Store.GetSession(ctx, s.ID)
		if err != nil {
			return contracts.Session{}, err
		}
		cur.Active = "sub_other"
		if _, err := r.Store.UpdateSession(ctx, cur, cur.Version); err != nil {
			return contracts.Session{}, err
		}
	}
	return r.Store.UpdateSession(ctx, s, expected)
}
