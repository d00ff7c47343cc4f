package turn

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/journal"
)

// Decide records an allow/deny decision for a pending approval of the
// session's running turn and wakes the tools phase. Deciding the same way
// twice is a no-op; changing a recorded decision is ErrConflict.
func (e *Engine) Decide(ctx context.Context, sessionID, approvalID string, d contracts.Decision, reason string) (contracts.Approval, error) {
	if d != contracts.Allow && d != contracts.Deny {
		return contracts.Approval{}, fmt.Errorf("decision %q is not allow or deny: %w", d, contracts.ErrInvalid)
	}
	for range 8 {
		sub, idx, err := e.findApproval(ctx, sessionID, approvalID)
		if err != nil {
			return contracts.Approval{}, err
		}
		a := sub.Approvals[idx]
		if a.Decision != "" {
			if a.Decision != d {
				return a, fmt.Errorf("approval %s was already decided %s: %w", approvalID, a.Decision, contracts.ErrConflict)
			}
			return a, e.decided(ctx, sub, a) // a repeat re-does what a crash may have cut short
		}
		next := sub
		next.Approvals = append([]contracts.Approval(nil), sub.Approvals...)
		da := &next.Approvals[idx]
		da.Decision, da.Reason, da.DecidedBy, da.DecidedAt = d, reason, asker(ctx), e.now()
		sub, err = journal.Update(ctx, e.Journal, sub, next, e.now())
		if e.lost(ctx, err) {
			continue
		}
		if err != nil {
			return a, err
		}
		return sub.Approvals[idx], e.decided(ctx, sub, sub.Approvals[idx])
	}
	return contracts.Approval{}, fmt.Errorf("deciding approval %s: too much contention: %w", approvalID, contracts.ErrConflict)
}

// decided appends approval a's approval_decided event (once: its key is the
// approval's) and wakes the tools phase.
func (e *Engine) decided(ctx context.Context, sub contracts.Submission, a contracts.Approval) error {
	if err := e.emit(ctx, DecidedEvent(sub, a)); err != nil {
		return err
	}
	return e.Enqueue(ctx, contracts.QueueTools, sub, "decided/"+a.ID)
}

// DecidedEvent is the approval_decided event of decided approval a of sub:
// Text "<decision> by <principal>" and ": <reason>" when one was given.
func DecidedEvent(sub contracts.Submission, a contracts.Approval) contracts.Event {
	text := string(a.Decision) + " by " + a.DecidedBy
	if a.Reason != "" {
		text += ": " + a.Reason
	}
	return contracts.Event{SubmissionID: sub.ID, Key: "decided/" + a.ID, Type: contracts.EventApprovalDecided, Step: a.Step,
		Tool: a.Tool, CallID: a.CallID, ApprovalID: a.ID, Text: text, At: a.DecidedAt}
}

func (e *Engine) findApproval(ctx context.Context, sessionID, approvalID string) (contracts.Submission, int, error) {
	sess, err := e.Journal.GetSession(ctx, sessionID)
	if err != nil {
		return contracts.Submission{}, 0, fmt.Errorf("reading session %s: %w", sessionID, err)
	}
	if sess.Active != "" {
		sub, err := e.Journal.GetSubmission(ctx, sess.Active)
		if err != nil && !isNotFound(err) {
			return sub, 0, fmt.Errorf("reading submission %s: %w", sess.Active, err)
		}
		if err == nil && sub.Phase == contracts.PhaseTools && sub.Cancel == nil {
			for i, a := range sub.Approvals {
				if a.ID == approvalID {
					return sub, i, nil
				}
			}
		}
	}
	return contracts.Submission{}, 0, fmt.Errorf("approval %s is not pending in session %s: %w", approvalID, sessionID, contracts.ErrNotFound)
}

// Pending lists the undecided approvals of the session's running turn.
func (e *Engine) Pending(ctx context.Context, sessionID string) ([]contracts.Approval, error) {
	sess, err := e.Journal.GetSession(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", sessionID, err)
	}
	if sess.Active == "" {
		return nil, nil
	}
	sub, err := e.Journal.GetSubmission(ctx, sess.Active)
	if err != nil || sub.Phase != contracts.PhaseTools || sub.Cancel != nil {
		return nil, nil
	}
	var out []contracts.Approval
	for _, a := range sub.Approvals {
		if a.Decision == "" {
			out = append(out, a)
		}
	}
	return out, nil
}
