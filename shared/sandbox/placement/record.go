package placement

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Sessions is the part of the journal a provider needs: the session, read
// and written conditionally on its Version (contracts.JournalStore
// satisfies it).
type Sessions interface {
	GetSession(ctx context.Context, id string) (contracts.Session, error)
	UpdateSession(ctx context.Context, s contracts.Session, expected int64) (contracts.Session, error)
}

// recordAttempts bounds the read-modify-write loop: each retry means
// another writer moved the session in between (the turn engine moves
// Active and Head), so a few rounds suffice.
const recordAttempts = 8

// Record sets the session's sandbox record to rec (nil clears it) whatever
// it was, re-reading and retrying when another writer moved the session
// (ErrConflict), at most a few times. Use Replace when a concurrent placement
// must not be overwritten.
func Record(ctx context.Context, sessions Sessions, sessionID string, rec *contracts.SandboxRecord) (contracts.Session, error) {
	return write(ctx, sessions, sessionID, rec, func(contracts.Session) bool { return true })
}

// Replace sets the session's sandbox record to rec (nil clears it) only if
// the stored record is still old (Same; nil = none). Conflicts caused by
// other fields moving are retried with a fresh read, as in Record. If the
// stored record is neither old nor rec — another process placed a sandbox
// first — it returns the current session and an error wrapping
// contracts.ErrConflict: the caller gives up its own sandbox and reconnects
// to the recorded one. A stored record already equal to rec is success.
func Replace(ctx context.Context, sessions Sessions, sessionID string, old, rec *contracts.SandboxRecord) (contracts.Session, error) {
	return write(ctx, sessions, sessionID, rec, func(s contracts.Session) bool { return Same(s.Sandbox, old) })
}

func write(ctx context.Context, sessions Sessions, sessionID string, rec *contracts.SandboxRecord, ok func(contracts.Session) bool) (contracts.Session, error) {
	var last error
	for range recordAttempts {
		s, err := sessions.GetSession(ctx, sessionID)
		if err != nil {
			return contracts.Session{}, fmt.Errorf("recording sandbox of session %s: %w", sessionID, err)
		}
		if Same(s.Sandbox, rec) {
			return s, nil
		}
		if !ok(s) {
			return s, fmt.Errorf("recording sandbox of session %s: it now holds %s: %w", sessionID, Describe(s.Sandbox), contracts.ErrConflict)
		}
		next := s
		if rec != nil {
			r := *rec
			next.Sandbox = &r
		} else {
			next.Sandbox = nil
		}
		out, err := sessions.UpdateSession(ctx, next, s.Version)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, contracts.ErrConflict) {
			return contracts.Session{}, fmt.Errorf("recording sandbox of session %s: %w", sessionID, err)
		}
		last = err
	}
	return contracts.Session{}, fmt.Errorf("recording sandbox of session %s: gave up after %d conflicting writes: %w", sessionID, recordAttempts, last)
}

// Same reports whether two records name the same sandbox placement (every
// field but Workspace equal; times compared with Equal, so a record read
// back from a store matches the one written). Two nils are the same. The
// workspace state moves under a placement (UpdateWorkspace) without making
// it another one.
func Same(a, b *contracts.SandboxRecord) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.ID == b.ID && a.Endpoint == b.Endpoint &&
		a.TokenRef == b.TokenRef && a.Fingerprint == b.Fingerprint && a.StartedAt.Equal(b.StartedAt) &&
		a.CertSHA256 == b.CertSHA256
}

// Describe names a record for logs and errors: kind, id and endpoint, never
// anything that leads to the token.
func Describe(r *contracts.SandboxRecord) string {
	if r == nil || r.ID == "" {
		return "no sandbox"
	}
	return fmt.Sprintf("%s sandbox %s at %s", r.Kind, r.ID, r.Endpoint)
}

// Released is what a released sandbox leaves on the session: no sandbox
// (no ID, no endpoint), the kind, and the workspace state, so the next
// sandbox is restored from the latest snapshot. Nil when there is no
// workspace state to keep.
func Released(r *contracts.SandboxRecord) *contracts.SandboxRecord {
	if r == nil || r.Workspace == nil {
		return nil
	}
	ws := *r.Workspace
	ws.Notice = ""
	return &contracts.SandboxRecord{Kind: r.Kind, Workspace: &ws}
}

// Running reports whether the record names a running (or once started)
// sandbox rather than a released one's workspace state.
func Running(r *contracts.SandboxRecord) bool { return r != nil && r.ID != "" }

// UpdateWorkspace applies change to the workspace state of the session's
// recorded sandbox if the record still names the placement of rec (Same),
// re-reading on conflicts as Record does. If another placement was recorded
// meanwhile it returns an error wrapping contracts.ErrConflict and writes
// nothing.
func UpdateWorkspace(ctx context.Context, sessions Sessions, sessionID string, rec *contracts.SandboxRecord, change func(*contracts.WorkspaceState)) error {
	var last error
	for range recordAttempts {
		s, err := sessions.GetSession(ctx, sessionID)
		if err != nil {
			return fmt.Errorf("recording workspace of session %s: %w", sessionID, err)
		}
		if !Same(s.Sandbox, rec) {
			return fmt.Errorf("recording workspace of session %s: it now holds %s: %w", sessionID, Describe(s.Sandbox), contracts.ErrConflict)
		}
		r := *s.Sandbox
		ws := contracts.WorkspaceState{}
		if r.Workspace != nil {
			ws = *r.Workspace
		}
		change(&ws)
		r.Workspace = &ws
		next := s
		next.Sandbox = &r
		if _, err = sessions.UpdateSession(ctx, next, s.Version); err == nil {
			return nil
		}
		if !errors.Is(err, contracts.ErrConflict) {
			return fmt.Errorf("recording workspace of session %s: %w", sessionID, err)
		}
		last = err
	}
	return fmt.Errorf("recording workspace of session %s: gave up after %d conflicting writes: %w", sessionID, recordAttempts, last)
}
