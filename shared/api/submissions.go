package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

type submitRequest struct {
	Prompt string `json:"prompt"`
}

func (s *server) submit(w http.ResponseWriter, r *http.Request) {
	var req submitRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	sub, created, err := s.Engine.Accept(s.ctx(r), r.PathValue("id"), req.Prompt, r.Header.Get("Idempotency-Key"))
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

func (s *server) listSubmissions(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.Journal.GetSession(s.ctx(r), id); err != nil {
		s.fail(w, r, err)
		return
	}
	subs, err := s.Journal.ListSubmissions(s.ctx(r), id, "", 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if subs == nil {
		subs = []contracts.Submission{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"submissions": subs})
}

// submission reads a submission and checks it belongs to the path's session.
func (s *server) submission(r *http.Request) (contracts.Submission, error) {
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

// MaxWait bounds the events long-poll.
const MaxWait = 60 * time.Second

type eventsResponse struct {
	Events []contracts.Event `json:"events"`
	Next   int64             `json:"next"`
	Phase  contracts.Phase   `json:"phase"`
	Done   bool              `json:"done"`
}

// events long-polls: it returns as soon as events after ?after= exist, the
// submission is terminal, or ?wait= (default 0, at most 60s) elapses.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, wait, err := pollParams(q.Get("after"), q.Get("wait"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.submission(r); err != nil {
		s.fail(w, r, err)
		return
	}
	sid := r.PathValue("sid")
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		var wake <-chan struct{}
		if s.Wake != nil {
			wake = s.Wake()
		}
		// Record first, then events: a terminal record's end event is
		// written before it, so this order never reports done without it.
		sub, err := s.Journal.GetSubmission(s.ctx(r), sid)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		evs, err := s.Events.ListEvents(s.ctx(r), sid, after, 500)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(evs) > 0 || sub.Phase.Terminal() || wait == 0 {
			resp := eventsResponse{Events: evs, Next: after, Phase: sub.Phase}
			if resp.Events == nil {
				resp.Events = []contracts.Event{}
			}
			if len(evs) > 0 {
				resp.Next = evs[len(evs)-1].Seq
			}
			resp.Done = sub.Phase.Terminal() && len(evs) < 500
			writeJSON(w, http.StatusOK, resp)
			return
		}
		poll := time.NewTimer(250 * time.Millisecond) // writers in other processes do not fire Wake
		select {
		case <-r.Context().Done():
			poll.Stop()
			return
		case <-deadline.C:
			wait = 0
		case <-wake:
		case <-poll.C:
		}
		poll.Stop()
	}
}

func pollParams(afterS, waitS string) (int64, time.Duration, error) {
	var after int64
	if afterS != "" {
		n, err := strconv.ParseInt(afterS, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("after=%q: want a non-negative integer: %w", afterS, contracts.ErrInvalid)
		}
		after = n
	}
	var wait time.Duration
	if waitS != "" {
		d, err := time.ParseDuration(waitS)
		if err != nil {
			secs, err2 := strconv.Atoi(waitS)
			if err2 != nil {
				return 0, 0, fmt.Errorf("wait=%q: want a duration like 20s: %w", waitS, contracts.ErrInvalid)
			}
			d = time.Duration(secs) * time.Second
		}
		if d < 0 || d > MaxWait {
			return 0, 0, fmt.Errorf("wait=%q: want 0s..%s: %w", waitS, MaxWait, contracts.ErrInvalid)
		}
		wait = d
	}
	return after, wait, nil
}
