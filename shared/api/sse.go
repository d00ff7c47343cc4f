package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Server-sent events: the events routes stream when the request accepts
// text/event-stream (and long-poll otherwise). Each event is one SSE
// message whose id resumes the stream exactly (Last-Event-ID, or ?after=),
// whose event is the journal event's type and whose data is the event as
// JSON; a submission's stream ends with an "end" message once the turn is
// terminal and every event was sent. Comments keep idle connections open.
const (
	// SSEKeepAlive is how often an idle stream sends a comment line.
	SSEKeepAlive = 15 * time.Second
	// SSEMaxDuration ends a stream (with an "expired" message); the
	// client reconnects with Last-Event-ID and loses nothing.
	SSEMaxDuration = 10 * time.Minute
	// SSEDeadlineMargin: a request with a deadline of its own sooner than
	// SSEMaxDuration (a Lambda invocation's timeout) ends its stream with
	// "expired" this long before it, so the client is told where to resume
	// instead of being cut off mid-stream.
	SSEDeadlineMargin = 10 * time.Second
	// SSEWriteTimeout bounds one write to a slow reader.
	SSEWriteTimeout = 30 * time.Second
	// ssePoll is how often a stream looks again when no wake-up came
	// (writers in other processes do not fire Wake).
	ssePoll = 250 * time.Millisecond
)

// wantsSSE: the request asks for an event stream — and not also for JSON
// (an EventSource sends Accept: text/event-stream alone; a client that
// accepts both, as MCP's Streamable HTTP does, gets the JSON long-poll).
func wantsSSE(r *http.Request) bool {
	a := strings.ToLower(strings.Join(r.Header.Values("Accept"), ","))
	return strings.Contains(a, "text/event-stream") && !strings.Contains(a, "application/json")
}

// canStream refuses an event stream where the response is delivered whole
// (API Gateway): the caller long-polls there.
func canStream(r *http.Request) error {
	if contracts.BufferedResponse(r.Context()) {
		return fmt.Errorf("this endpoint delivers responses whole and cannot stream events: long-poll with ?after=&wait= (or use the API's streaming function URL): %w", contracts.ErrNotAcceptable)
	}
	return nil
}

// sseWriter writes SSE messages, each flushed, under a write deadline.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.write("retry: 1000\n\n") // reconnect after a second
	return s
}

func (s *sseWriter) write(text string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(SSEWriteTimeout)) // unsupported: the server's own timeout holds
	if _, err := fmt.Fprint(s.w, text); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err // a writer without Flush (a Lambda response stream) sends as it is written
	}
	return nil
}

// message writes one SSE message (data is one line of JSON).
func (s *sseWriter) message(id, event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	var m strings.Builder
	if id != "" {
		m.WriteString("id: " + id + "\n")
	}
	m.WriteString("event: " + event + "\ndata: ")
	m.Write(b)
	m.WriteString("\n\n")
	return s.write(m.String())
}

// resumeFrom is where a stream resumes: the Last-Event-ID header (what a
// reconnecting EventSource sends), else ?after=.
func resumeFrom(r *http.Request) string {
	if id := strings.TrimSpace(r.Header.Get("Last-Event-ID")); id != "" {
		return id
	}
	return r.URL.Query().Get("after")
}

// streamEnd fires when a stream must end with "expired": after
// SSEMaxDuration, or SSEDeadlineMargin before the request's own deadline
// when that comes sooner.
func streamEnd(r *http.Request) <-chan time.Time {
	d := SSEMaxDuration
	if dl, ok := r.Context().Deadline(); ok {
		d = min(d, time.Until(dl)-SSEDeadlineMargin)
	}
	return time.After(max(d, 0))
}

// waiter waits for something new: a wake-up, the poll, a keep-alive due
// (it writes the comment), the stream's end or the client's going.
type waiter struct {
	s        *server
	r        *http.Request
	out      *sseWriter
	deadline <-chan time.Time
	idle     time.Time
}

// wait returns false when the stream must end (ended says why: "" for a
// client gone or a write failed, "expired" at streamEnd).
func (wt *waiter) wait(wake <-chan struct{}) (ok bool, ended string) {
	poll := time.NewTimer(ssePoll)
	defer poll.Stop()
	select {
	case <-wt.r.Context().Done():
		return false, ""
	case <-wt.deadline:
		return false, "expired"
	case <-wake:
	case <-poll.C:
	}
	if time.Since(wt.idle) >= SSEKeepAlive {
		wt.idle = time.Now()
		if wt.out.write(": keep-alive\n\n") != nil {
			return false, ""
		}
	}
	return true, ""
}

func (s *server) wake() <-chan struct{} {
	if s.Wake == nil {
		return nil
	}
	return s.Wake()
}

// wakeFor waits for the next append to submission sid's events (WakeFor;
// Wake without it): the channel and the function that ends the wait.
func (s *server) wakeFor(sid string) (<-chan struct{}, func()) {
	if s.WakeFor != nil {
		return s.WakeFor(sid)
	}
	return s.wake(), func() {}
}

// streamEvents streams submission sid's events after the resume point,
// then "end" (with the terminal phase) once the turn ended.
func (s *server) streamEvents(w http.ResponseWriter, r *http.Request, sid string) {
	after := int64(0)
	if from := resumeFrom(r); from != "" {
		n, err := strconv.ParseInt(from, 10, 64)
		if err != nil || n < 0 {
			s.fail(w, r, fmt.Errorf("resume point %q (Last-Event-ID or after): want a non-negative event seq: %w", quoteClip(from), contracts.ErrInvalid))
			return
		}
		after = n
	}
	out := startSSE(w)
	wt := &waiter{s: s, r: r, out: out, deadline: streamEnd(r), idle: time.Now()}
	for {
		wake, done := s.wakeFor(sid)
		if !s.streamRound(wt, out, sid, &after, wake) {
			done()
			return
		}
		done()
	}
}

// streamRound sends what is new of sid's events and waits for more; false
// when the stream ended.
func (s *server) streamRound(wt *waiter, out *sseWriter, sid string, after *int64, wake <-chan struct{}) bool {
	r := wt.r
	sub, err := s.Journal.GetSubmission(s.ctx(r), sid) // record first: its end event is written before it
	if err != nil {
		b, _ := s.errorOf(r, err)
		_ = out.message("", "error", b)
		return false
	}
	evs, err := s.Events.ListEvents(s.ctx(r), sid, *after, MaxEventsPage)
	if err != nil {
		b, _ := s.errorOf(r, err)
		_ = out.message("", "error", b)
		return false
	}
	for _, ev := range evs {
		if out.message(strconv.FormatInt(ev.Seq, 10), string(ev.Type), ev) != nil {
			return false
		}
		*after = ev.Seq
		wt.idle = time.Now()
	}
	if len(evs) == MaxEventsPage {
		return true // more are waiting
	}
	if sub.Phase.Terminal() {
		_ = out.message("", "end", map[string]any{"phase": sub.Phase, "next": *after})
		return false
	}
	if ok, ended := wt.wait(wake); !ok {
		if ended != "" {
			_ = out.message("", ended, map[string]any{"next": *after})
		}
		return false
	}
	return true
}

// sessionEvents streams every turn of a session, oldest first, and goes on
// with the turns submitted while it runs (GET /v1/sessions/{id}/events,
// Accept: text/event-stream only). An event's id is "<submission>:<seq>":
// Last-Event-ID resumes after it exactly; each ended turn's stream is
// followed by a "turn_end" message (id "<submission>:end").
func (s *server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	sess, err := s.session(r) // first: another principal's session is a 404, whatever it asks for
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !wantsSSE(r) {
		s.sessionTurns(w, r, sess)
		return
	}
	if err := canStream(r); err != nil {
		s.fail(w, r, err)
		return
	}
	cur, after, ended, err := sessionResume(resumeFrom(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := startSSE(w)
	wt := &waiter{s: s, r: r, out: out, deadline: streamEnd(r), idle: time.Now()}
	for {
		wake := s.wake()
		subs, err := s.Journal.ListSubmissions(s.ctx(r), sess.ID, "", 0)
		if err != nil {
			b, _ := s.errorOf(r, err)
			_ = out.message("", "error", b)
			return
		}
		for _, sub := range subs {
			if sub.ID < cur || (sub.ID == cur && ended) {
				continue // streamed before the resume point
			}
			if sub.ID != cur {
				cur, after, ended = sub.ID, 0, false
			}
			for {
				evs, err := s.Events.ListEvents(s.ctx(r), sub.ID, after, MaxEventsPage)
				if err != nil {
					b, _ := s.errorOf(r, err)
					_ = out.message("", "error", b)
					return
				}
				for _, ev := range evs {
					if out.message(sub.ID+":"+strconv.FormatInt(ev.Seq, 10), string(ev.Type), ev) != nil {
						return
					}
					after = ev.Seq
					wt.idle = time.Now()
				}
				if len(evs) < MaxEventsPage {
					break
				}
			}
			if !sub.Phase.Terminal() {
				break // the session's turns run one at a time: nothing later has events yet
			}
			// sub was read before its events: terminal then, so every event
			// of it was listed above.
			if out.message(sub.ID+":end", "turn_end", map[string]any{"submission_id": sub.ID, "phase": sub.Phase}) != nil {
				return
			}
			ended = true
		}
		if ok, why := wt.wait(wake); !ok {
			if why != "" {
				_ = out.message("", why, map[string]any{"resume": cur})
			}
			return
		}
	}
}

// sessionResume reads a session stream's resume point: "<submission>:<seq>"
// or "<submission>:end" ("" : from the session's first turn).
func sessionResume(from string) (sub string, after int64, ended bool, err error) {
	if from == "" {
		return "", 0, false, nil
	}
	id, pos, ok := strings.Cut(from, ":")
	bad := fmt.Errorf("resume point %q (Last-Event-ID or after): want <submission>:<seq> or <submission>:end: %w", quoteClip(from), contracts.ErrInvalid)
	if !ok || id == "" || len(id) > 100 {
		return "", 0, false, bad
	}
	if pos == "end" {
		return id, 0, true, nil
	}
	n, perr := strconv.ParseInt(pos, 10, 64)
	if perr != nil || n < 0 {
		return "", 0, false, bad
	}
	return id, n, false, nil
}

// sessionTurns answers the session stream's route without Accept:
// text/event-stream: the session's turns (at most MaxEventsPage, oldest
// first) with their phases — where a poller's per-turn long-polls start.
func (s *server) sessionTurns(w http.ResponseWriter, r *http.Request, sess contracts.Session) {
	subs, err := s.Journal.ListSubmissions(s.ctx(r), sess.ID, "", MaxEventsPage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	type turn struct {
		ID    string          `json:"id"`
		Phase contracts.Phase `json:"phase"`
	}
	out := struct {
		Turns  []turn `json:"turns"`
		Stream string `json:"stream"`
	}{Turns: []turn{}, Stream: "send Accept: text/event-stream to follow every turn of the session as server-sent events"}
	for _, sub := range subs {
		out.Turns = append(out.Turns, turn{ID: sub.ID, Phase: sub.Phase})
	}
	writeJSON(w, http.StatusOK, out)
}
