package turn_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
)

// maxTurnCommits is what one bench turn (accept, model → tools → model →
// commit) costs the embedded store in committed write transactions when
// its phases are received from the queue (a test stepping them, Drain):
// accept 1; the first model phase 3 (the queue receive, the lease, and the
// closing batch: the stream's tail with its completion marker, the
// assistant node, the read-only call it ran itself (fuse.go) — its started
// marker, result and events — the tool node, the advance to the next model
// step carrying its lease (journal.AdvanceLeased), the next phase's send,
// claimed for this worker (worker.Pool.Chain) by rewriting the handled
// message's row (sqlite Forward: nothing left to delete)); the second
// model phase 1 (stream tail, completion, assistant node and the whole
// commit: a final answer commits in the model phase's own write where the
// store batches). A change that adds a write fails here, in review, rather
// than in a benchmark nobody reads.
const maxTurnCommits = 5

// maxServedTurnCommits is the same turn run by a serving worker pool, as
// `cairn dev` and the benchmarks run it: the accept's write also takes the
// first model phase's lease and hands its message to the pool as received
// (worker.Chainer.Origin), so that phase neither receives nor leases.
const maxServedTurnCommits = 3

func TestTurnCommits(t *testing.T) {
	h := benchSession(t)
	countTurnCommits(t, h, maxTurnCommits, func(ctx context.Context) error {
		h.Drain()
		return nil
	})
}

func TestServedTurnCommits(t *testing.T) {
	h := benchSession(t)
	serve(t, h)
	countTurnCommits(t, h, maxServedTurnCommits, nil)
}

// serve runs h's worker pool until the test ends, once it serves.
func serve(t *testing.T, h *enginetest.Harness) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { h.RT.Workers.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	<-h.RT.Workers.Serving()
}

func benchSession(t *testing.T) *enginetest.Harness {
	h := enginetest.New(t)
	// A read-only call's started marker goes with its result unless the
	// call runs for StartedAfter, and its model phase runs it unless it
	// runs for FuseWithin: on a saturated machine list_dir might.
	h.RT.Engine.StartedAfter = time.Hour
	h.RT.Engine.FuseWithin = time.Hour
	return h
}

// countTurnCommits runs one bench turn — run steps it; nil waits for a
// serving pool to end it — and fails when it made more commits than budget.
func countTurnCommits(t *testing.T, h *enginetest.Harness, budget uint64, run func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	before := h.Store.Commits()
	sub, _, err := h.RT.Engine.Accept(ctx, s.ID, "go", "k")
	if err != nil {
		t.Fatal(err)
	}
	if run == nil {
		err = awaitEnd(ctx, h, sub.ID)
	} else {
		err = run(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get(sub.ID); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s %s", got.Phase, got.Error)
	}
	if n := h.Store.Commits() - before; n > budget {
		t.Fatalf("one turn made %d commits, the budget is %d: batch the new write with its phase's others", n, budget)
	} else {
		t.Logf("one turn: %d commits", n)
	}
}

// maxServedTurnPages is what the served bench turn writes to SQLite's
// write-ahead log, in pages (4 KiB frames, each two system calls): a
// commit costs the pages it dirties, one or more per table and index it
// touches, so a new index, a write that moves an index entry for nothing
// or a row that no longer fits its page shows here before it shows in a
// benchmark. Measured: 103 frames in three turns (34.3 a turn, schema 4;
// 109 with schema 3; the same on every run, the manual clock and ids make
// it deterministic).
const maxServedTurnPages = 35

func TestServedTurnPages(t *testing.T) {
	h := benchSession(t)
	serve(t, h)
	s := h.Session(contracts.SessionSpec{Model: "scripted:bench", Tools: []contracts.ToolConfig{{Name: "list_dir"}}})
	turn := func(i int) {
		t.Helper()
		sub, _, err := h.RT.Engine.Accept(context.Background(), s.ID, "go", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := awaitEnd(context.Background(), h, sub.ID); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // the session's workspace and first pages exist: a continuing turn
		turn(i)
	}
	// An empty log, then three turns: their frames are all it holds (far
	// fewer than the automatic checkpoint's 1,000).
	db, err := sql.Open("sqlite", h.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var busy, logged, moved int
	if err := db.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &moved); err != nil || busy != 0 {
		t.Fatalf("emptying the log: busy %d, %v", busy, err)
	}
	const turns = 3
	for i := range turns {
		turn(3 + i)
	}
	frames, commits := walFrames(t, h.DBPath+"-wal")
	if commits != turns*maxServedTurnCommits {
		t.Errorf("%d commits in the log, want %d", commits, turns*maxServedTurnCommits)
	}
	if frames > turns*maxServedTurnPages {
		t.Fatalf("%d turns wrote %d pages, the budget is %d a turn: a new index or a moving key?", turns, frames, maxServedTurnPages)
	}
	t.Logf("%d turns: %d pages in %d commits", turns, frames, commits)
}

// walFrames counts a SQLite write-ahead log's frames and its commits (a
// frame whose header gives the database size ends one).
func walFrames(t *testing.T, path string) (frames, commits int) {
	t.Helper()
	wal, err := os.ReadFile(path)
	if err != nil || len(wal) < 32 {
		t.Fatalf("reading %s: %d bytes, %v", path, len(wal), err)
	}
	size := 24 + int(binary.BigEndian.Uint32(wal[8:12]))
	salt := wal[16:24]
	for off := 32; off+size <= len(wal); off += size {
		if !bytes.Equal(wal[off+8:off+16], salt) { // a frame of an earlier log, left past the end of this one
			break
		}
		frames++
		if binary.BigEndian.Uint32(wal[off+4:]) != 0 {
			commits++
		}
	}
	return frames, commits
}
