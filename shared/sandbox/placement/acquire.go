package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// acquireRounds bounds how often Acquire starts over after losing the
// session record to another process.
const acquireRounds = 3

// Acquirer is the Acquire that every remote provider (shared/sandbox/proc,
// shared/sandbox/fargate) runs, with the kind's own steps plugged in: under
// the session's lock (Locks), read the session; if its record is of Kind,
// Reuse it; else (or when Reuse declines) Start a new sandbox and record it
// with Replace. If another process records its sandbox first, the new one is
// stopped and Acquire starts over, so it reconnects to the winner — at most
// a few rounds, then an error wrapping contracts.ErrConflict. Every error
// but CheckSessionID's names the session ("acquiring sandbox for session
// …"). All fields but CheckSessionID are required.
type Acquirer struct {
	// Kind is the sandbox kind served: a spec of another kind is
	// ErrInvalid, and "" means Kind (both fingerprint alike).
	Kind     string
	Sessions Sessions
	Locks    *Locks
	Log      *slog.Logger
	// IDKey is the log key of a record's ID ("sandbox_id", "task_arn"),
	// and RecordedMsg the message logged once a new sandbox is recorded.
	IDKey, RecordedMsg string
	// CheckSessionID rejects a session id the kind cannot place; its error
	// is returned as it is. Nil accepts every id.
	CheckSessionID func(sessionID string) error
	// Reuse is given the session's record when it is of Kind, and fp, the
	// spec's Fingerprint. It returns a client of the recorded sandbox if
	// that fits and answers; otherwise nil, after getting rid of the
	// sandbox if need be. An error (the caller's context ending, or not
	// knowing the sandbox's state) ends Acquire.
	Reuse func(ctx context.Context, sessionID string, old *contracts.SandboxRecord, fp string) (contracts.SandboxAPI, error)
	// Start starts a new sandbox for the session, spec and its
	// fingerprint fp.
	Start func(ctx context.Context, sessionID string, spec contracts.SandboxSpec, fp string) (Started, error)
	// Snapshots, when set, makes the workspace of a spec Durable accepts
	// outlive its sandbox (durable.go): a new sandbox is restored from the
	// latest snapshot before it is recorded, and the sandbox Acquire
	// returns is a contracts.DurableWorkspace.
	Snapshots *snapshot.Store
	// Durable reports whether a spec's workspace dies with its sandbox
	// (and so is snapshotted). Nil: every spec's does.
	Durable func(spec contracts.SandboxSpec) bool
}

// isDurable reports whether spec's workspace is kept through snapshots.
func (a *Acquirer) isDurable(spec contracts.SandboxSpec) bool {
	return a.Snapshots != nil && (a.Durable == nil || a.Durable(spec))
}

// Started is a sandbox an Acquirer's Start has just started: its client,
// the record to store on the session, and Stop, which gets rid of it when
// the record is not stored.
type Started struct {
	Sandbox contracts.SandboxAPI
	Record  *contracts.SandboxRecord
	Stop    func(ctx context.Context)
}

// Acquire returns the session's sandbox of Kind: the recorded one if Reuse
// takes it, else a new one, recorded on the session.
func (a *Acquirer) Acquire(ctx context.Context, sessionID string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	if spec.Kind != "" && spec.Kind != a.Kind {
		return nil, fmt.Errorf("acquiring sandbox for session %s: kind %q (this provider serves %q): %w", sessionID, spec.Kind, a.Kind, contracts.ErrInvalid)
	}
	if a.CheckSessionID != nil {
		if err := a.CheckSessionID(sessionID); err != nil {
			return nil, err
		}
	}
	spec.Kind = a.Kind // "" and Kind are the same placement
	fp := Fingerprint(spec)
	unlock, err := a.Locks.Lock(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
	}
	defer unlock()

	for range acquireRounds {
		s, err := a.Sessions.GetSession(ctx, sessionID)
		if err != nil {
			return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
		}
		old := s.Sandbox
		if Running(old) && old.Kind == a.Kind {
			sb, err := a.Reuse(ctx, sessionID, old, fp)
			if err != nil {
				return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
			}
			if sb != nil {
				if a.isDurable(spec) {
					return a.durable(sessionID, old, sb), nil
				}
				return sb, nil
			}
		}
		st, err := a.Start(ctx, sessionID, spec, fp)
		if err != nil {
			return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
		}
		rec := st.Record
		if a.isDurable(spec) {
			ws, err := a.restore(ctx, sessionID, old, st.Sandbox)
			if err != nil {
				st.Stop(ctx)
				return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
			}
			rec.Workspace = ws
		}
		if _, err := Replace(ctx, a.Sessions, sessionID, old, rec); err != nil {
			st.Stop(ctx)
			if errors.Is(err, contracts.ErrConflict) {
				a.Log.InfoContext(ctx, "another process placed the sandbox first, reconnecting", "session_id", sessionID, a.IDKey, rec.ID)
				continue
			}
			return nil, fmt.Errorf("acquiring sandbox for session %s: %w", sessionID, err)
		}
		a.Log.InfoContext(ctx, a.RecordedMsg, "session_id", sessionID, a.IDKey, rec.ID, "endpoint", rec.Endpoint, "replaces", Describe(old))
		if a.isDurable(spec) {
			return a.durable(sessionID, rec, st.Sandbox), nil
		}
		return st.Sandbox, nil
	}
	return nil, fmt.Errorf("acquiring sandbox for session %s: the session's sandbox kept changing under concurrent placements: %w", sessionID, contracts.ErrConflict)
}
