package journal_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/journal"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// seed stores a submission at (step, phase) and returns the stored record.
func seed(t *testing.T, s contracts.JournalStore, step int, phase contracts.Phase, mod func(*contracts.Submission)) contracts.Submission {
	t.Helper()
	sub := contracts.Submission{ID: "sub_1", SessionID: "ses_1", Prompt: "hi", Phase: contracts.PhaseAccepted, CreatedAt: t0, UpdatedAt: t0}
	created, ok, err := s.CreateSubmission(context.Background(), sub)
	if err != nil || !ok {
		t.Fatalf("create: ok=%v err=%v", ok, err)
	}
	next := created
	next.Step, next.Phase = step, phase
	if mod != nil {
		mod(&next)
	}
	out, err := s.UpdateSubmission(context.Background(), next, created.Version)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func get(t *testing.T, s contracts.JournalStore, id string) contracts.Submission {
	t.Helper()
	sub, err := s.GetSubmission(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func at(step int, p contracts.Phase) contracts.Submission {
	return contracts.Submission{ID: "sub_x", Step: step, Phase: p}
}

func TestCheckForward(t *testing.T) {
	const (
		acc  = contracts.PhaseAccepted
		mod  = contracts.PhaseModel
		tls  = contracts.PhaseTools
		com  = contracts.PhaseCommit
		done = contracts.PhaseCommitted
		fail = contracts.PhaseFailed
		canc = contracts.PhaseCancelled
	)
	cases := []struct {
		name      string
		cur, next contracts.Submission
		ok        bool
	}{
		{"same phase", at(2, tls), at(2, tls), true},
		{"accepted to model", at(0, acc), at(0, mod), true},
		{"model to tools", at(0, mod), at(0, tls), true},
		{"model to commit", at(3, mod), at(3, com), true},
		{"tools to next step model", at(0, tls), at(1, mod), true},
		{"commit to committed", at(1, com), at(1, done), true},
		{"model to failed", at(1, mod), at(1, fail), true},
		{"accepted to cancelled", at(0, acc), at(0, canc), true},
		{"committed stays committed", at(1, done), at(1, done), true},
		{"failed stays failed", at(1, fail), at(1, fail), true},
		{"committed to failed", at(1, done), at(1, fail), false},
		{"failed to model", at(1, fail), at(2, mod), false},
		{"cancelled to committed", at(0, canc), at(0, done), false},
		{"committed back to commit", at(1, done), at(1, com), false},
		{"step goes back", at(2, mod), at(1, tls), false},
		{"step goes back even to a later phase", at(2, mod), at(1, com), false},
		{"tools back to model", at(1, tls), at(1, mod), false},
		{"commit back to tools", at(1, com), at(1, tls), false},
		{"model back to accepted", at(0, mod), at(0, acc), false},
		{"failed back to commit", at(1, fail), at(1, com), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := journal.CheckForward(c.cur, c.next)
			if c.ok && err != nil {
				t.Fatalf("want allowed, got %v", err)
			}
			if !c.ok && !errors.Is(err, contracts.ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
		})
	}
}

func TestAdvance(t *testing.T) {
	ctx := context.Background()
	leased := func(s *contracts.Submission) {
		s.LeaseOwner, s.LeaseUntil, s.Attempt = "w1", t0.Add(time.Minute), 3
	}
	cases := []struct {
		name        string
		step        int
		phase       contracts.Phase
		toStep      int
		toPhase     contracts.Phase
		wantAttempt int
	}{
		{"phase change resets attempt", 0, contracts.PhaseModel, 0, contracts.PhaseTools, 0},
		{"step change resets attempt", 0, contracts.PhaseTools, 1, contracts.PhaseModel, 0},
		{"same (step, phase) keeps attempt", 1, contracts.PhaseTools, 1, contracts.PhaseTools, 3},
		{"terminal resets attempt", 1, contracts.PhaseCommit, 1, contracts.PhaseCommitted, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			cur := seed(t, s, c.step, c.phase, leased)
			next := cur
			next.Step, next.Phase, next.Result = c.toStep, c.toPhase, "answer"
			now := t0.Add(5 * time.Second)
			out, err := journal.Advance(ctx, s, cur, next, now)
			if err != nil {
				t.Fatal(err)
			}
			stored := get(t, s, cur.ID)
			if !reflect.DeepEqual(out, stored) {
				t.Fatalf("returned record differs from stored:\n%+v\n%+v", out, stored)
			}
			if stored.LeaseOwner != "" || !stored.LeaseUntil.IsZero() {
				t.Errorf("lease not released: %q until %v", stored.LeaseOwner, stored.LeaseUntil)
			}
			if stored.Attempt != c.wantAttempt {
				t.Errorf("attempt = %d, want %d", stored.Attempt, c.wantAttempt)
			}
			if stored.Version != cur.Version+1 || !stored.UpdatedAt.Equal(now) {
				t.Errorf("version %d updated %v, want %d and %v", stored.Version, stored.UpdatedAt, cur.Version+1, now)
			}
			if stored.Step != c.toStep || stored.Phase != c.toPhase || stored.Result != "answer" {
				t.Errorf("stored %d %s %q", stored.Step, stored.Phase, stored.Result)
			}
		})
	}
}

func TestAdvanceRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("stale version conflicts and leaves the record", func(t *testing.T) {
		s := newStore(t)
		cur := seed(t, s, 0, contracts.PhaseModel, nil)
		// Someone else wins a write first.
		moved, err := journal.Update(ctx, s, cur, cur, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		next := cur
		next.Phase = contracts.PhaseTools
		out, err := journal.Advance(ctx, s, cur, next, t0.Add(2*time.Second))
		if !errors.Is(err, contracts.ErrConflict) {
			t.Fatalf("want ErrConflict, got %v", err)
		}
		if !reflect.DeepEqual(out, cur) {
			t.Errorf("a failed advance must return cur unchanged")
		}
		if got := get(t, s, cur.ID); !reflect.DeepEqual(got, moved) {
			t.Errorf("record changed by a losing advance:\n%+v\n%+v", got, moved)
		}
	})
	t.Run("backward move is invalid and not written", func(t *testing.T) {
		s := newStore(t)
		cur := seed(t, s, 1, contracts.PhaseTools, nil)
		next := cur
		next.Phase = contracts.PhaseModel
		if _, err := journal.Advance(ctx, s, cur, next, t0); !errors.Is(err, contracts.ErrInvalid) {
			t.Fatalf("want ErrInvalid, got %v", err)
		}
		if got := get(t, s, cur.ID); !reflect.DeepEqual(got, cur) {
			t.Errorf("record changed")
		}
	})
}

func TestLease(t *testing.T) {
	ctx := context.Background()
	const ttl = time.Minute
	now := t0.Add(10 * time.Second)
	cases := []struct {
		name      string
		phase     contracts.Phase
		holder    string
		until     time.Time
		owner     string
		wantErr   error
		wantUntil time.Time
	}{
		{"free lease is taken", contracts.PhaseModel, "", time.Time{}, "w1", nil, now.Add(ttl)},
		{"own live lease is renewed", contracts.PhaseModel, "w1", now.Add(5 * time.Second), "w1", nil, now.Add(ttl)},
		{"expired foreign lease is taken", contracts.PhaseTools, "w2", now.Add(-time.Second), "w1", nil, now.Add(ttl)},
		{"lease ending exactly now is expired", contracts.PhaseTools, "w2", now, "w1", nil, now.Add(ttl)},
		{"live foreign lease is refused", contracts.PhaseModel, "w2", now.Add(time.Second), "w1", contracts.ErrConflict, time.Time{}},
		{"terminal is refused", contracts.PhaseCommitted, "", time.Time{}, "w1", contracts.ErrConflict, time.Time{}},
		{"failed is refused", contracts.PhaseFailed, "", time.Time{}, "w1", contracts.ErrConflict, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			cur := seed(t, s, 2, c.phase, func(sub *contracts.Submission) {
				sub.LeaseOwner, sub.LeaseUntil, sub.Attempt = c.holder, c.until, 2
			})
			out, err := journal.Lease(ctx, s, cur, c.owner, now, ttl, func(sub *contracts.Submission) { sub.StreamKey = "st_new" })
			stored := get(t, s, cur.ID)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("want %v, got %v", c.wantErr, err)
				}
				if !reflect.DeepEqual(stored, cur) || !reflect.DeepEqual(out, cur) {
					t.Fatalf("refused lease changed the record")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, stored) {
				t.Fatalf("returned record differs from stored")
			}
			if stored.LeaseOwner != c.owner || !stored.LeaseUntil.Equal(c.wantUntil) {
				t.Errorf("lease %q until %v, want %q until %v", stored.LeaseOwner, stored.LeaseUntil, c.owner, c.wantUntil)
			}
			if stored.Attempt != 3 {
				t.Errorf("attempt = %d, want 3", stored.Attempt)
			}
			if stored.StreamKey != "st_new" {
				t.Errorf("mutate not applied in the lease write: stream key %q", stored.StreamKey)
			}
			if stored.Version != cur.Version+1 || stored.Step != 2 || stored.Phase != c.phase {
				t.Errorf("version %d step %d phase %s", stored.Version, stored.Step, stored.Phase)
			}
		})
	}
}

func TestLeaseStaleVersionConflicts(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	cur := seed(t, s, 0, contracts.PhaseModel, nil)
	moved, err := journal.Lease(ctx, s, cur, "w1", t0, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	// w2 acts on the old copy: the lease looks free to it, the version does not match.
	if _, err := journal.Lease(ctx, s, cur, "w2", t0, time.Minute, nil); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("want ErrConflict, got %v", err)
	}
	if got := get(t, s, cur.ID); !reflect.DeepEqual(got, moved) || got.LeaseOwner != "w1" {
		t.Fatalf("record changed by the losing lease: %+v", got)
	}
}

func TestLeased(t *testing.T) {
	now := t0
	cases := []struct {
		holder string
		until  time.Time
		owner  string
		want   bool
	}{
		{"", time.Time{}, "w1", false},
		{"w2", now.Add(time.Second), "w1", true},
		{"w2", now.Add(time.Second), "", true},
		{"w1", now.Add(time.Second), "w1", false},
		{"w2", now, "w1", false},
		{"w2", now.Add(-time.Second), "w1", false},
	}
	for _, c := range cases {
		sub := contracts.Submission{LeaseOwner: c.holder, LeaseUntil: c.until}
		if got := journal.Leased(sub, c.owner, now); got != c.want {
			t.Errorf("Leased(holder %q until %v, owner %q) = %v, want %v", c.holder, c.until.Sub(now), c.owner, got, c.want)
		}
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	cur := seed(t, s, 1, contracts.PhaseTools, func(sub *contracts.Submission) {
		sub.LeaseOwner, sub.LeaseUntil, sub.Attempt = "w1", t0.Add(time.Minute), 2
	})

	for _, move := range []struct {
		step  int
		phase contracts.Phase
	}{{1, contracts.PhaseCommit}, {2, contracts.PhaseTools}, {1, contracts.PhaseModel}} {
		next := cur
		next.Step, next.Phase = move.step, move.phase
		if _, err := journal.Update(ctx, s, cur, next, t0); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("update to (%d, %s): want ErrInvalid, got %v", move.step, move.phase, err)
		}
	}
	if got := get(t, s, cur.ID); !reflect.DeepEqual(got, cur) {
		t.Fatalf("refused updates changed the record")
	}

	next := cur
	next.Approvals = []contracts.Approval{{ID: "apr_1", CallID: "c1", Tool: "bash"}}
	now := t0.Add(3 * time.Second)
	out, err := journal.Update(ctx, s, cur, next, now)
	if err != nil {
		t.Fatal(err)
	}
	stored := get(t, s, cur.ID)
	if !reflect.DeepEqual(out, stored) || len(stored.Approvals) != 1 || stored.Version != cur.Version+1 || !stored.UpdatedAt.Equal(now) {
		t.Fatalf("update not written: %+v", stored)
	}
	if stored.LeaseOwner != "w1" || stored.Attempt != 2 {
		t.Errorf("update must keep the lease and attempt: %q %d", stored.LeaseOwner, stored.Attempt)
	}
	if _, err := journal.Update(ctx, s, cur, next, now); !errors.Is(err, contracts.ErrConflict) {
		t.Errorf("stale update: want ErrConflict, got %v", err)
	}
}

func TestBreak(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	cur := seed(t, s, 0, contracts.PhaseModel, func(sub *contracts.Submission) {
		sub.LeaseOwner, sub.LeaseUntil, sub.Attempt = "dead", t0.Add(time.Hour), 2
	})
	now := t0.Add(time.Second)
	out, err := journal.Break(ctx, s, cur, now)
	if err != nil {
		t.Fatal(err)
	}
	stored := get(t, s, cur.ID)
	if !reflect.DeepEqual(out, stored) {
		t.Fatal("returned record differs from stored")
	}
	if stored.LeaseOwner != "" || !stored.LeaseUntil.IsZero() || stored.Attempt != 2 || stored.Phase != contracts.PhaseModel || !stored.UpdatedAt.Equal(now) {
		t.Errorf("break: %+v", stored)
	}
	// Anyone may now lease it.
	if _, err := journal.Lease(ctx, s, stored, "w1", now, time.Minute, nil); err != nil {
		t.Errorf("lease after break: %v", err)
	}
	// Break is conditional too: the stale copy loses.
	if _, err := journal.Break(ctx, s, cur, now); !errors.Is(err, contracts.ErrConflict) {
		t.Errorf("stale break: want ErrConflict, got %v", err)
	}
	if got := get(t, s, cur.ID); got.LeaseOwner != "w1" {
		t.Errorf("stale break overwrote the lease: %q", got.LeaseOwner)
	}
}
