package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/turn"
)

type submitRequest struct {
	Prompt string `json:"prompt"`
	// Parent forks the conversation: the turn starts from this node of the
	// session's tree instead of its head (its commit moves the head there).
	Parent string `json:"parent,omitempty"`
}

func (s *server) submit(w http.ResponseWriter, r *http.Request) {
	var req submitRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sess, err := s.ownSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sub, created, err := s.Engine.AcceptWith(s.ctx(r), sess.ID, req.Prompt, key, turn.AcceptOptions{Parent: req.Parent})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusAccepted
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, sub)
}

type submissionSummary = contracts.SubmissionSummary

func summarize(x contracts.Submission) submissionSummary {
	v := submissionSummary{ID: x.ID, SessionID: x.SessionID, IdempotencyKey: x.IdempotencyKey,
		Prompt: clipText(x.Prompt, PreviewBytes), PromptBytes: len(x.Prompt), Phase: x.Phase, Step: x.Step,
		Version: x.Version, Attempt: x.Attempt, Result: clipText(x.Result, PreviewBytes), ResultBytes: len(x.Result),
		Error: clipText(x.Error, PreviewBytes), Usage: x.Usage, Cost: x.Cost, StartedAt: x.StartedAt, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
	for _, a := range x.Approvals {
		if a.Decision == "" {
			v.PendingApprovals++
		}
	}
	return v
}

// listSubmissions pages a session's submissions, oldest first, as
// summaries; ?phase= keeps those in one phase.
func (s *server) listSubmissions(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	p, err := pageParams(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	phase := contracts.Phase(q.Get("phase"))
	switch phase {
	case "", contracts.PhaseAccepted, contracts.PhaseModel, contracts.PhaseTools, contracts.PhaseCommit,
		contracts.PhaseCommitted, contracts.PhaseFailed, contracts.PhaseCancelled:
	default:
		s.fail(w, r, fmt.Errorf("phase=%q: not a phase: %w", quoteClip(string(phase)), contracts.ErrInvalid))
		return
	}
	if _, err := s.session(r); err != nil {
		s.fail(w, r, err)
		return
	}
	key := func(x submissionSummary) string { return x.ID }
	list, pos, more, err := window(p, key, func(n int) ([]submissionSummary, error) {
		all, err := s.Journal.ListSubmissions(s.ctx(r), id, phase, n)
		out := make([]submissionSummary, len(all))
		for i, x := range all {
			out[i] = summarize(x)
		}
		return out, err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, next := page(list, pos, more, key, MaxPageBytes)
	writeJSON(w, http.StatusOK, listPage("submissions", items, next))
}

// submission reads a submission and checks it belongs to the path's
// session, which the principal may read.
func (s *server) submission(r *http.Request) (contracts.Submission, error) {
	if _, err := s.session(r); err != nil {
		return contracts.Submission{}, err
	}
	sub, err := s.Journal.GetSubmission(s.ctx(r), r.PathValue("sid"))
	if err == nil && sub.SessionID != r.PathValue("id") {
		err = fmt.Errorf("submission %s in session %s: %w", r.PathValue("sid"), r.PathValue("id"), contracts.ErrNotFound)
	}
	return sub, err
}

func (s *server) getSubmission(w http.ResponseWriter, r *http.Request) {
	sub, err := s.submission(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sub)
}

// MaxWait bounds the events long-poll: below the api function's 29 s
// behind API Gateway, with room for the reads around the wait. `cairn dev`
// sets its server's write timeout above it.
const MaxWait = 25 * time.Second

// MaxEventsPage is the most events one poll returns (also cut at
// MaxPageBytes).
const MaxEventsPage = 500

type eventsResponse = contracts.EventsPage

// events long-polls: it returns as soon as events after ?after= exist, the
// submission is terminal, or ?wait= (default 0, at most MaxWait) elapses.
// A page holds at most ?limit= (default and most MaxEventsPage) events and
// MaxPageBytes; done is true only on the page that reaches the end.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	if wantsSSE(r) {
		if _, err := s.submission(r); err != nil { // first: another principal's is a 404
			s.fail(w, r, err)
			return
		}
		if err := canStream(r); err != nil {
			s.fail(w, r, err)
			return
		}
		s.streamEvents(w, r, r.PathValue("sid"))
		return
	}
	q := r.URL.Query()
	after, wait, err := pollParams(q.Get("after"), q.Get("wait"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit := MaxEventsPage
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxEventsPage {
			s.fail(w, r, fmt.Errorf("limit=%q: want a whole number 1-%d: %w", quoteClip(l), MaxEventsPage, contracts.ErrInvalid))
			return
		}
	}
	if _, err := s.submission(r); err != nil {
		s.fail(w, r, err)
		return
	}
	sid := r.PathValue("sid")
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		wake, done := s.wakeFor(sid)
		// Record first, then events: a terminal record's end event is
		// written before it, so this order never reports done without it.
		sub, err := s.Journal.GetSubmission(s.ctx(r), sid)
		if err != nil {
			done()
			s.fail(w, r, err)
			return
		}
		evs, err := s.Events.ListEvents(s.ctx(r), sid, after, limit)
		if err != nil {
			done()
			s.fail(w, r, err)
			return
		}
		if len(evs) > 0 || sub.Phase.Terminal() || wait == 0 {
			done()
			cut := fit(evs, MaxPageBytes)
			resp := eventsResponse{Events: evs[:cut], Next: after, Phase: sub.Phase}
			if resp.Events == nil {
				resp.Events = []contracts.Event{}
			}
			if cut > 0 {
				resp.Next = evs[cut-1].Seq
			}
			resp.Done = sub.Phase.Terminal() && len(evs) < limit && cut == len(evs)
			writeJSON(w, http.StatusOK, resp)
			return
		}
		poll := time.NewTimer(250 * time.Millisecond) // writers in other processes do not fire Wake
		select {
		case <-r.Context().Done():
			poll.Stop()
			done()
			return
		case <-deadline.C:
			wait = 0
		case <-wake:
		case <-poll.C:
		}
		poll.Stop()
		done()
	}
}

func pollParams(afterS, waitS string) (int64, time.Duration, error) {
	var after int64
	if afterS != "" {
		n, err := strconv.ParseInt(afterS, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("after=%q: want a non-negative integer: %w", quoteClip(afterS), contracts.ErrInvalid)
		}
		after = n
	}
	wait, err := parseWait(waitS)
	return after, wait, err
}

// parseWait reads ?wait=: whole seconds ("20") or a Go duration ("20s",
// "1500ms"), 0 to MaxWait. A number is bounded before it is scaled, so a
// huge one is refused rather than wrapped.
func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	bad := fmt.Errorf("wait=%q: want 0 to %d seconds, or a duration like 20s up to %s: %w",
		quoteClip(s), int(MaxWait/time.Second), MaxWait, contracts.ErrInvalid)
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		if n > uint64(MaxWait/time.Second) {
			return 0, bad
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxWait {
		return 0, bad
	}
	return d, nil
}
