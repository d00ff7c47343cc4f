package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// Accept records a prompt as a submission of the session (idempotent on
// idempotencyKey) and starts it if the session is idle; otherwise it waits
// ACCEPTED until the turns before it end. created=false means the key was
// seen before and the earlier submission is returned.
func (e *Engine) Accept(ctx context.Context, sessionID, prompt, idempotencyKey string) (contracts.Submission, bool, error) {
	return e.AcceptWith(ctx, sessionID, prompt, idempotencyKey, AcceptOptions{})
}

// AcceptOptions are the choices of a submission beyond its prompt.
type AcceptOptions struct {
	// Parent is the transcript node of the session the turn starts from (a
	// fork); "" is the session head when the turn begins. It must not be an
	// assistant node that asks for tools (its results would be missing).
	Parent string
	// Link is the W3C traceparent of a span that caused the turn but whose
	// trace it does not join (a workflow run's evaluation): the turn's
	// trace starts afresh, its accept span linked to that span. "" = the
	// accept span continues ctx's trace.
	Link string
}

// AcceptWith is Accept with options: a fork from opts.Parent.
func (e *Engine) AcceptWith(ctx context.Context, sessionID, prompt, idempotencyKey string, opts AcceptOptions) (_ contracts.Submission, _ bool, err error) {
	// The turn's trace starts here (continuing the caller's traceparent,
	// which the API put in ctx).
	start := []trace.SpanStartOption{trace.WithAttributes(attribute.String("cairn.session_id", sessionID))}
	if opts.Link != "" {
		start = append(start, trace.WithNewRoot(), trace.WithLinks(telemetry.Link(opts.Link)...))
	}
	ctx, span := telemetry.Tracer().Start(ctx, "cairn.accept", start...)
	defer func() {
		telemetry.Fail(span, err)
		span.End()
	}()
	if p, ok := contracts.PrincipalFrom(ctx); ok {
		span.SetAttributes(attribute.String("cairn.principal", p.Name))
	}
	if strings.TrimSpace(prompt) == "" {
		return contracts.Submission{}, false, fmt.Errorf("prompt is empty: %w", contracts.ErrInvalid)
	}
	if len(prompt) > MaxPromptBytes {
		return contracts.Submission{}, false, fmt.Errorf("prompt is %d bytes, limit %d: %w", len(prompt), MaxPromptBytes, contracts.ErrTooLarge)
	}
	if !utf8.ValidString(prompt) {
		return contracts.Submission{}, false, fmt.Errorf("prompt is not valid UTF-8: %w", contracts.ErrInvalid)
	}
	if len(idempotencyKey) > 256 {
		return contracts.Submission{}, false, fmt.Errorf("idempotency key longer than 256 bytes: %w", contracts.ErrInvalid)
	}
	sess, err := e.Journal.GetSession(ctx, sessionID)
	if err != nil {
		return contracts.Submission{}, false, fmt.Errorf("reading session %s: %w", sessionID, err)
	}
	if opts.Parent != "" {
		if err := e.checkParent(ctx, sess, opts.Parent); err != nil {
			return contracts.Submission{}, false, err
		}
	}
	now := e.now()
	var sub contracts.Submission
	var created bool
	ctx, handed := e.origin(ctx) // the start's first phase may run on this process's worker, its lease taken here
	defer handed()
	err = e.batch(ctx, func(ctx context.Context) error { // the submission and its start: one write
		sub, created, err = e.Journal.CreateSubmission(ctx, contracts.Submission{
			ID: e.IDs.New("sub"), SessionID: sessionID, IdempotencyKey: idempotencyKey, Prompt: prompt,
			Owner: sess.Owner, Parent: opts.Parent, Phase: contracts.PhaseAccepted, CreatedAt: now, UpdatedAt: now, Trace: telemetry.Inject(ctx),
		})
		if err != nil {
			return fmt.Errorf("creating submission in session %s: %w", sessionID, err)
		}
		if created {
			err = e.startNext(ctx, sessionID, &sess, &sub)
		} else { // a repeat: its submission may have begun, or still wait for a start cut short — look
			err = e.StartNext(ctx, sessionID)
		}
		if err != nil {
			// The submission is durable; repair starts it if this failed.
			e.log().WarnContext(ctx, "starting submission", "session_id", sessionID, "submission_id", sub.ID, "error", err)
		}
		return nil
	})
	if err != nil {
		return sub, false, err
	}
	return sub, created, nil
}

// StartNext starts the session's oldest ACCEPTED submission if no other
// submission of the session is running. Idempotent; safe to call from
// commit, fail, accept and repair concurrently. It always looks for a
// waiting submission, and marks a busy session Queued: repair, retry and
// cancel call it, and a submission they leave waiting must be found when
// the running turn ends.
func (e *Engine) StartNext(ctx context.Context, sessionID string) error {
	return e.startNext(ctx, sessionID, nil, nil)
}

// startNext is StartNext that starts from known, the session as its caller
// just read or wrote it, instead of reading it again (a known that is no
// longer current loses its conditional write, and the next round reads),
// and that trusts the session's Queued flag: an accept passes own, the
// submission it just created, which an idle session that has no queued one
// starts without a look; a commit passes no own and looks only when Queued.
// known == nil && own == nil is StartNext, which always looks.
func (e *Engine) startNext(ctx context.Context, sessionID string, known *contracts.Session, own *contracts.Submission) error {
	always := known == nil && own == nil
	for range 8 {
		var sess contracts.Session
		var err error
		if known != nil {
			sess, known = *known, nil
		} else if sess, err = e.Journal.GetSession(ctx, sessionID); err != nil {
			return fmt.Errorf("reading session %s: %w", sessionID, err)
		}
		if sess.Active != "" {
			a, err := e.Journal.GetSubmission(ctx, sess.Active)
			if err != nil && !errors.Is(err, contracts.ErrNotFound) {
				return fmt.Errorf("reading active submission %s: %w", sess.Active, err)
			}
			if err == nil && !a.Phase.Terminal() { // a turn holds the session (begun, or claimed and not begun yet)
				if !sess.Queued && (always || own != nil && own.ID != a.ID) {
					// What is left waiting must be looked for when that
					// turn ends: marked before anything else.
					upd := sess
					upd.Queued, upd.UpdatedAt = true, e.now()
					sess, err = e.Journal.UpdateSession(ctx, upd, sess.Version)
					if e.lost(ctx, err) {
						continue
					}
					if err != nil {
						return fmt.Errorf("marking session %s queued: %w", sessionID, err)
					}
				}
				if a.Phase == contracts.PhaseAccepted {
					return e.begin(ctx, sess, a)
				}
				return nil
			}
		}
		var next *contracts.Submission
		looked := always || sess.Queued
		if looked {
			waiting, err := e.Journal.ListSubmissions(ctx, sessionID, contracts.PhaseAccepted, 1)
			if err != nil {
				return fmt.Errorf("listing waiting submissions of session %s: %w", sessionID, err)
			}
			if len(waiting) > 0 {
				next = &waiting[0]
			}
		} else if own != nil {
			next = own
		}
		upd := sess
		upd.Queued = looked && next != nil // more may wait behind the one found
		if next == nil {
			if sess.Active == "" && !sess.Queued {
				return nil
			}
			upd.Active = ""
		} else {
			upd.Active = next.ID
		}
		upd.UpdatedAt = e.now()
		sess, err = e.Journal.UpdateSession(ctx, upd, sess.Version)
		if e.lost(ctx, err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("claiming session %s: %w", sessionID, err)
		}
		if next == nil {
			return nil
		}
		return e.begin(ctx, sess, *next)
	}
	return fmt.Errorf("starting next submission of session %s: too much contention: %w", sessionID, contracts.ErrConflict)
}

// checkParent refuses a fork point that is not a node of the session, or
// that is an assistant node asking for tools (a conversation continued
// from it would lack their results).
func (e *Engine) checkParent(ctx context.Context, sess contracts.Session, parent string) error {
	if len(parent) > 512 {
		return fmt.Errorf("parent is %d bytes, limit 512: %w", len(parent), contracts.ErrInvalid)
	}
	n, err := e.Transcript.GetNode(ctx, parent)
	if errors.Is(err, contracts.ErrNotFound) || (err == nil && n.SessionID != sess.ID) {
		return fmt.Errorf("parent %q is not a node of session %s: %w", parent, sess.ID, contracts.ErrInvalid)
	}
	if err != nil {
		return fmt.Errorf("reading node %s: %w", parent, err)
	}
	for _, b := range n.Blocks {
		if b.Type == contracts.BlockToolUse {
			return fmt.Errorf("parent %s is an assistant node that asks for tools (mid-turn): fork from a node that ends a turn, a user node or a tool-results node: %w", parent, contracts.ErrInvalid)
		}
	}
	return nil
}

// begin appends the user node under the session head (or the fork point
// the submission names) and moves the submission to (0, MODEL). A retried
// submission resumes where it failed instead; one whose cancel was
// requested ends CANCELLED.
func (e *Engine) begin(ctx context.Context, sess contracts.Session, sub contracts.Submission) error {
	if did, err := e.cancelled(ctx, sub); did || err != nil {
		return err
	}
	if sub.Resume != "" && sub.Resume != contracts.PhaseAccepted {
		return e.resume(ctx, sub)
	}
	now := e.now()
	parent := sess.Head
	if sub.Parent != "" {
		parent = sub.Parent
	}
	node := contracts.Node{
		ID: ids.Node(sub.ID, 0, contracts.RoleUser), Parent: parent, SessionID: sess.ID, SubmissionID: sub.ID,
		Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: sub.Prompt}}, CreatedAt: sub.CreatedAt,
	}
	if err := e.putNode(ctx, node); err != nil {
		return fmt.Errorf("writing user node of submission %s: %w", sub.ID, err)
	}
	next := sub
	next.Phase, next.Step, next.Leaf, next.StartedAt, next.Resume = contracts.PhaseModel, 0, node.ID, now, ""
	owner := e.chained(ctx, contracts.QueueModel) // its model phase runs here next: its lease goes in this write
	sub, err := e.advance(ctx, sub, next, owner)
	if e.lost(ctx, err) {
		return nil
	}
	if err != nil {
		return err
	}
	e.advanced(ctx, node.ID)
	// Its first phase joins its own trace, also when it starts after the
	// session's previous turn (StartNext, from that turn's commit).
	if err := e.Enqueue(telemetry.Extract(ctx, sub.Trace), contracts.QueueModel, sub, ""); err != nil {
		return err
	}
	return e.handOver(ctx, sub, next, owner)
}
