package recovery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
)

// Evidence is what the stores say about one submission, plus the caller's
// clock reading and knobs. Gather fills the store part; the caller sets
// StuckAfter, MaxAttempts and DeadLetter.
type Evidence struct {
	Now time.Time
	// LeaseLive: some owner holds a lease on the record that has not
	// expired at Now.
	LeaseLive bool

	// StuckAfter: a record with no lease that advanced less than this ago
	// is progressing (its wake-up is in flight). 0 = stuck at once.
	StuckAfter time.Duration
	// MaxAttempts caps attempts per (step, phase); ≤ 0 = no cap here (the
	// phase handlers still cap when they lease).
	MaxAttempts int
	// DeadLetter is set when a wake-up of the submission was dead-lettered.
	DeadLetter *DeadLetter

	// SessionActive is the session's Active submission id; ActivePhase its
	// phase when it is another submission ("" if none or gone). Read for
	// ACCEPTED records only.
	SessionActive string
	ActivePhase   contracts.Phase

	// StreamComplete: the record's StreamKey has a completion marker;
	// StreamChunks counts the chunks stored under it. MODEL only.
	StreamComplete bool
	StreamChunks   int

	// ToolRecords are the records of sub.Step keyed by call id;
	// ToolEffects the effect of each requested call's tool, keyed by call
	// id, from the bound toolset (missing = Mutating). TOOLS only.
	ToolRecords map[string]contracts.ToolRecord
	ToolEffects map[string]contracts.Effect

	// LeafExists: the record's Leaf node is in the transcript (true when
	// there is no leaf to check).
	LeafExists bool
}

// DeadLetter names a dead-lettered wake-up: the queue it was dead-lettered
// from and the (step, phase) it carried.
type DeadLetter struct {
	Queue string
	Step  int
	Phase contracts.Phase
}

// Gather reads the evidence about sub from the stores at now. It reads only
// what sub's phase needs, and nothing for a terminal, leased or parked
// record. sess is sub's session: its Active id is read for an ACCEPTED
// record and its tool specs for a TOOLS one (bound spec-only, without a
// sandbox, to learn each tool's effect); otherwise it may be zero.
func Gather(ctx context.Context, jr contracts.JournalStore, transcript contracts.TranscriptStore, streams contracts.StreamStore,
	registry contracts.ToolRegistry, sess contracts.Session, sub contracts.Submission, now time.Time) (Evidence, error) {
	ev := Evidence{Now: now, LeaseLive: journal.Leased(sub, "", now), LeafExists: true}
	if sub.Phase.Terminal() || ev.LeaseLive || parked(sub) {
		return ev, nil
	}
	if sub.Leaf != "" && sub.Phase != contracts.PhaseAccepted {
		_, err := transcript.GetNode(ctx, sub.Leaf)
		switch {
		case errors.Is(err, contracts.ErrNotFound):
			ev.LeafExists = false
		case err != nil:
			return ev, fmt.Errorf("reading leaf %s of submission %s: %w", sub.Leaf, sub.ID, err)
		}
	}
	switch sub.Phase {
	case contracts.PhaseAccepted:
		ev.SessionActive = sess.Active
		if sess.Active != "" && sess.Active != sub.ID {
			a, err := jr.GetSubmission(ctx, sess.Active)
			if err != nil && !errors.Is(err, contracts.ErrNotFound) {
				return ev, fmt.Errorf("reading active submission %s of session %s: %w", sess.Active, sess.ID, err)
			}
			ev.ActivePhase = a.Phase
		}
	case contracts.PhaseModel:
		if sub.StreamKey == "" {
			break
		}
		st, err := streams.GetStream(ctx, sub.StreamKey)
		if err != nil {
			return ev, fmt.Errorf("reading stream %s of submission %s: %w", sub.StreamKey, sub.ID, err)
		}
		ev.StreamComplete, ev.StreamChunks = st.Done != nil, len(st.Chunks)
	case contracts.PhaseTools:
		recs, err := jr.ToolRecords(ctx, sub.ID, sub.Step)
		if err != nil {
			return ev, fmt.Errorf("reading tool records of submission %s step %d: %w", sub.ID, sub.Step, err)
		}
		ev.ToolRecords = recs
		ev.ToolEffects = make(map[string]contracts.Effect, len(sub.ToolRequests))
		ts, err := registry.Bind(sess.Spec.Tools, contracts.Binding{SessionID: sess.ID})
		if errors.Is(err, contracts.ErrInvalid) {
			return ev, nil // unknown effects count as mutating; the tools phase fails the binding
		}
		if err != nil {
			return ev, fmt.Errorf("binding tools of session %s: %w", sess.ID, err)
		}
		for _, call := range sub.ToolRequests {
			ev.ToolEffects[call.ID] = ts.Effect(call.Name)
		}
	}
	return ev, nil
}

func parked(sub contracts.Submission) bool {
	if sub.Phase != contracts.PhaseTools {
		return false
	}
	for _, a := range sub.Approvals {
		if a.Decision == "" {
			return true
		}
	}
	return false
}
