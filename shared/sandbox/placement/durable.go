package placement

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// maxSnapshotError bounds the error text kept on a record.
const maxSnapshotError = 500

// restore prepares the workspace state of a new sandbox sb replacing old:
// the previous sandbox's latest snapshot is restored into it, and the
// notice for the model says so (and from when), or that the workspace was
// lost. A first sandbox (no state to carry) gets an empty state and no
// notice. Only the caller's context ending is an error.
func (a *Acquirer) restore(ctx context.Context, sessionID string, old *contracts.SandboxRecord, sb contracts.SandboxAPI) (*contracts.WorkspaceState, error) {
	if old == nil || old.Kind != a.Kind || old.Workspace == nil {
		return &contracts.WorkspaceState{}, nil
	}
	prev := old.Workspace
	ws := &contracts.WorkspaceState{Snapshot: prev.Snapshot, SnapshotError: prev.SnapshotError}
	if prev.Snapshot == nil { // the previous sandbox died before any snapshot of it was taken
		why := "none was taken before it stopped"
		if prev.SnapshotError != "" {
			why = "none could be taken: " + prev.SnapshotError
		}
		ws.Notice = fmt.Sprintf("[cairn: this call runs in a new sandbox and the workspace is lost: it starts empty, because there is no snapshot of the previous one (%s); anything written there is gone]", why)
		return ws, nil
	}
	snap := *prev.Snapshot
	sink, ok := sb.(snapshot.Sink)
	var n int
	var err error
	if !ok {
		err = errors.New("this sandbox cannot import a workspace")
	} else {
		n, err = a.Snapshots.Restore(ctx, sink, sessionID, snap)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		a.Log.WarnContext(ctx, "restoring the workspace snapshot failed", "session_id", sessionID, "snapshot", snap.ID, "error", err)
		ws.Notice = fmt.Sprintf("[cairn: this call runs in a new sandbox and the workspace is lost: restoring the snapshot taken at %s failed (%s); files written earlier may be missing or incomplete]",
			snap.At.UTC().Format(time.RFC3339), clip(err.Error()))
		return ws, nil
	}
	a.Log.InfoContext(ctx, "workspace restored from snapshot", "session_id", sessionID, "snapshot", snap.ID, "entries", n, "taken_at", snap.At)
	left := ""
	if snap.Skipped > 0 {
		left = fmt.Sprintf("; %d entries were not kept (sockets, fifos, devices, other users' hard links, paths over 4096 bytes)", snap.Skipped)
	}
	ws.Notice = fmt.Sprintf("[cairn: this call runs in a new sandbox; its workspace was restored from the snapshot taken at %s (%d files, %d bytes%s): changes made after that snapshot are lost]",
		snap.At.UTC().Format(time.RFC3339), snap.Files, snap.Bytes, left)
	if prev.SnapshotError != "" {
		ws.Notice = ws.Notice[:len(ws.Notice)-1] + fmt.Sprintf("; the last attempt to snapshot it failed (%s)]", prev.SnapshotError)
	}
	return ws, nil
}

func clip(s string) string {
	if len(s) > maxSnapshotError {
		return s[:maxSnapshotError] + "…"
	}
	return s
}

// durable is the sandbox Acquire returns for a durable workspace: the
// sandbox itself plus contracts.DurableWorkspace over the session's record.
type durable struct {
	contracts.SandboxAPI
	a         *Acquirer
	sessionID string

	mu  sync.Mutex
	rec contracts.SandboxRecord // the placement; rec.Workspace is kept current
}

var (
	_ contracts.DurableWorkspace = (*durable)(nil)
	_ contracts.CallLedger       = (*durable)(nil)
)

func (a *Acquirer) durable(sessionID string, rec *contracts.SandboxRecord, sb contracts.SandboxAPI) *durable {
	d := &durable{SandboxAPI: sb, a: a, sessionID: sessionID, rec: *rec}
	if rec.Workspace == nil {
		d.rec.Workspace = &contracts.WorkspaceState{}
	} else {
		ws := *rec.Workspace
		d.rec.Workspace = &ws
	}
	return d
}

// CallOutcome asks the sandbox's ledger; a sandbox without one knows
// nothing.
func (d *durable) CallOutcome(ctx context.Context, callID string) (contracts.CallOutcome, error) {
	if l, ok := d.SandboxAPI.(contracts.CallLedger); ok {
		return l.CallOutcome(ctx, callID)
	}
	return contracts.CallOutcome{CallID: callID, State: contracts.CallUnknown}, nil
}

func (d *durable) WorkspaceNotice() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rec.Workspace.Notice
}

func (d *durable) NoticeGiven(ctx context.Context) error {
	d.mu.Lock()
	rec := d.rec
	d.mu.Unlock()
	if rec.Workspace.Notice == "" {
		return nil
	}
	if err := UpdateWorkspace(ctx, d.a.Sessions, d.sessionID, &rec, func(ws *contracts.WorkspaceState) { ws.Notice = "" }); err != nil {
		return err
	}
	d.mu.Lock()
	d.rec.Workspace.Notice = ""
	d.mu.Unlock()
	return nil
}

// SaveWorkspace snapshots the workspace and records the snapshot (or why
// it failed) on the session's record; an unchanged workspace writes
// nothing.
func (d *durable) SaveWorkspace(ctx context.Context) error {
	src, ok := d.SandboxAPI.(snapshot.Source)
	if !ok {
		return nil
	}
	d.mu.Lock()
	rec := d.rec
	prev, hadErr := rec.Workspace.Snapshot, rec.Workspace.SnapshotError != ""
	d.mu.Unlock()
	snap, err := d.a.Snapshots.Save(ctx, src, d.sessionID, prev)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		msg := clip(err.Error())
		if uerr := UpdateWorkspace(ctx, d.a.Sessions, d.sessionID, &rec, func(ws *contracts.WorkspaceState) { ws.SnapshotError = msg }); uerr != nil {
			return errors.Join(err, uerr)
		}
		d.mu.Lock()
		d.rec.Workspace.SnapshotError = msg
		d.mu.Unlock()
		return err
	}
	if snap == prev && !hadErr {
		return nil
	}
	if err := UpdateWorkspace(ctx, d.a.Sessions, d.sessionID, &rec, func(ws *contracts.WorkspaceState) {
		ws.Snapshot, ws.SnapshotError = snap, ""
	}); err != nil {
		return err
	}
	d.mu.Lock()
	d.rec.Workspace.Snapshot, d.rec.Workspace.SnapshotError = snap, ""
	d.mu.Unlock()
	d.a.Log.DebugContext(ctx, "workspace snapshot recorded", "session_id", d.sessionID, "snapshot", snap.ID, "files", snap.Files, "bytes", snap.Bytes)
	return nil
}

var _ contracts.MCPHost = (*durable)(nil)

// MCP passes a request to the sandbox's stdio MCP servers, if it runs any.
func (d *durable) MCP(ctx context.Context, r contracts.MCPRequest) (contracts.MCPResponse, error) {
	if h, ok := d.SandboxAPI.(contracts.MCPHost); ok {
		return h.MCP(ctx, r)
	}
	return contracts.MCPResponse{}, fmt.Errorf("this sandbox runs no MCP servers: %w", contracts.ErrInvalid)
}
