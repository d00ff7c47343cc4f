package placement_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// box is a SandboxAPI told apart by name; its methods are never called.
type box struct {
	contracts.SandboxAPI
	name string
}

// kind is an Acquirer's plug-ins with a log of what they were asked.
type kind struct {
	reuse   func(old *contracts.SandboxRecord) (contracts.SandboxAPI, error)
	started int
	stopped []string // ids of the started sandboxes stopped
	reused  []string // ids of the records offered to Reuse
}

func (k *kind) acquirer(m *memSessions) *placement.Acquirer {
	return &placement.Acquirer{
		Kind: "process", Sessions: m, Locks: &placement.Locks{},
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		IDKey: "sandbox_id", RecordedMsg: "sandbox started",
		CheckSessionID: placement.CheckSessionID,
		Reuse: func(ctx context.Context, sessionID string, old *contracts.SandboxRecord, fp string) (contracts.SandboxAPI, error) {
			k.reused = append(k.reused, old.ID)
			if k.reuse == nil {
				return nil, nil
			}
			return k.reuse(old)
		},
		Start: func(ctx context.Context, sessionID string, spec contracts.SandboxSpec, fp string) (placement.Started, error) {
			k.started++
			if spec.Kind != "process" || fp != placement.Fingerprint(spec) {
				return placement.Started{}, fmt.Errorf("start got kind %q, fingerprint %s", spec.Kind, fp)
			}
			id := fmt.Sprintf("new-%d", k.started)
			r := rec(id)
			r.Fingerprint = fp
			return placement.Started{Sandbox: box{name: id}, Record: r, Stop: func(context.Context) { k.stopped = append(k.stopped, id) }}, nil
		},
	}
}

func TestAcquirerStartsAndRecords(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		recorded *contracts.SandboxRecord
		reuse    func(old *contracts.SandboxRecord) (contracts.SandboxAPI, error)
		want     string   // name of the box returned
		reused   []string // records offered to Reuse
		stored   string   // id recorded afterwards
	}{
		{name: "none recorded", want: "new-1", stored: "new-1"},
		{name: "reused", recorded: rec("old"), reuse: func(old *contracts.SandboxRecord) (contracts.SandboxAPI, error) {
			return box{name: old.ID}, nil
		}, want: "old", reused: []string{"old"}, stored: "old"},
		{name: "declined", recorded: rec("old"), want: "new-1", reused: []string{"old"}, stored: "new-1"},
		{name: "other kind", recorded: &contracts.SandboxRecord{Kind: "fargate", ID: "arn"}, want: "new-1", stored: "new-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMem("s")
			if tc.recorded != nil {
				if _, err := placement.Record(ctx, m, "s", tc.recorded); err != nil {
					t.Fatal(err)
				}
			}
			k := &kind{reuse: tc.reuse}
			sb, err := k.acquirer(m).Acquire(ctx, "s", contracts.SandboxSpec{})
			if err != nil {
				t.Fatal(err)
			}
			if got := sb.(box).name; got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if strings.Join(k.reused, ",") != strings.Join(tc.reused, ",") || len(k.stopped) != 0 {
				t.Errorf("reused %v, stopped %v; want reused %v, none stopped", k.reused, k.stopped, tc.reused)
			}
			if s, _ := m.GetSession(ctx, "s"); s.Sandbox == nil || s.Sandbox.ID != tc.stored {
				t.Errorf("recorded %s, want %s", placement.Describe(s.Sandbox), tc.stored)
			}
		})
	}
}

func TestAcquirerRefuses(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		session   string
		spec      contracts.SandboxSpec
		reuse     func(old *contracts.SandboxRecord) (contracts.SandboxAPI, error)
		want      error
		wantStart bool
	}{
		{name: "other kind", session: "s", spec: contracts.SandboxSpec{Kind: "fargate"}, want: contracts.ErrInvalid},
		{name: "bad session id", session: "../s", want: contracts.ErrInvalid},
		{name: "unknown session", session: "nope", want: contracts.ErrNotFound},
		{name: "reuse fails", session: "s", reuse: func(*contracts.SandboxRecord) (contracts.SandboxAPI, error) { return nil, boom }, want: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMem("s")
			if _, err := placement.Record(ctx, m, "s", rec("old")); err != nil {
				t.Fatal(err)
			}
			k := &kind{reuse: tc.reuse}
			_, err := k.acquirer(m).Acquire(ctx, tc.session, tc.spec)
			if !errors.Is(err, tc.want) || k.started != 0 {
				t.Errorf("err = %v, %d started; want %v, none started", err, k.started, tc.want)
			}
		})
	}
}

// Losing the record to another process stops the new sandbox and reconnects
// to the winner's; losing every round is ErrConflict.
func TestAcquirerLosesTheRace(t *testing.T) {
	ctx := context.Background()
	t.Run("reconnects to the winner", func(t *testing.T) {
		m := newMem("s")
		m.before = func(s *contracts.Session) {
			if s.Sandbox == nil {
				s.Sandbox, s.Version = rec("winner"), s.Version+1
			}
		}
		k := &kind{reuse: func(old *contracts.SandboxRecord) (contracts.SandboxAPI, error) { return box{name: old.ID}, nil }}
		sb, err := k.acquirer(m).Acquire(ctx, "s", contracts.SandboxSpec{})
		if err != nil || sb.(box).name != "winner" {
			t.Fatalf("got %v, %v; want the winner's sandbox", sb, err)
		}
		if k.started != 1 || strings.Join(k.stopped, ",") != "new-1" {
			t.Errorf("%d started, stopped %v; want new-1 started and stopped", k.started, k.stopped)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		m := newMem("s")
		n := 0
		m.before = func(s *contracts.Session) {
			n++
			s.Sandbox, s.Version = rec(fmt.Sprint("winner-", n)), s.Version+1
		}
		k := &kind{}
		_, err := k.acquirer(m).Acquire(ctx, "s", contracts.SandboxSpec{})
		if !errors.Is(err, contracts.ErrConflict) || !strings.Contains(err.Error(), "kept changing") {
			t.Fatalf("err = %v, want ErrConflict after the last round", err)
		}
		if k.started != 3 || len(k.stopped) != 3 {
			t.Errorf("%d started, %d stopped; want 3 of each", k.started, len(k.stopped))
		}
	})
}
