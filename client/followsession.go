package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

// SessionEvent is one message of a session's event stream: an event of
// one of its turns, or (TurnEnd set) the end of a turn after its last
// event.
type SessionEvent struct {
	// ID is the message's id, "<submission>:<seq>" or "<submission>:end":
	// SessionFollowOptions.From resumes after it.
	ID      string
	Event   contracts.Event // zero on a turn end
	TurnEnd *Turn           // the ended turn and its terminal phase
}

// SessionFollowOptions say how FollowSession follows a session.
type SessionFollowOptions struct {
	// From resumes after the message with this id (a SessionEvent.ID; ""
	// = from the session's first turn).
	From string
	// Progress is told of each reconnection in one line (Reconnecting).
	Progress io.Writer
}

// FollowSession streams every turn of a session, oldest first, and then
// the turns submitted while it runs (GET /v1/sessions/{id}/events as
// server-sent events, on the WithStreamURL when set), handing each
// message to fn in order and once each. It ends only when fn returns an
// error (returned; ErrStop: nil), ctx ends, the server cannot stream
// (406 behind API Gateway: long-poll each turn with Follow instead) or
// stays away past the reconnect bound; when the server goes away it
// reconnects and resumes after the last message fn got (Last-Event-ID).
func (c *Client) FollowSession(ctx context.Context, sessionID string, opts SessionFollowOptions, fn func(SessionEvent) error) error {
	last := opts.From
	resume := func() string { return ", resuming after " + last }
	open := func() (*http.Response, error) {
		h := http.Header{"Accept": {"text/event-stream"}}
		if last != "" {
			h.Set("Last-Event-ID", last)
		}
		return c.openStream(ctx, request{route: "GET /v1/sessions/{id}/events", args: []string{sessionID}, header: h, stream: true})
	}
	poll, err := c.follow(ctx, opts.Progress, resume, open, func(m sseMessage) (bool, error) {
		if m.event == "message" || m.event == "" || m.id == "" {
			return false, nil
		}
		if handedOn(last, m.id) {
			return false, nil // handed on before a reconnection
		}
		se := SessionEvent{ID: m.id}
		if m.event == "turn_end" {
			var t struct {
				SubmissionID string          `json:"submission_id"`
				Phase        contracts.Phase `json:"phase"`
			}
			if err := json.Unmarshal([]byte(m.data), &t); err != nil {
				return false, fmt.Errorf("a turn_end message: %w", err)
			}
			se.TurnEnd = &Turn{ID: t.SubmissionID, Phase: t.Phase}
		} else if err := json.Unmarshal([]byte(m.data), &se.Event); err != nil {
			return false, fmt.Errorf("a %s message: %w", m.event, err)
		}
		if err := fn(se); err != nil {
			return false, &callbackError{err}
		}
		last = m.id
		return false, nil
	})
	var cb *callbackError
	switch {
	case poll:
		return fmt.Errorf("following session %s: %w", sessionID, err)
	case errors.As(err, &cb) && errors.Is(cb.err, ErrStop):
		return nil
	case errors.As(err, &cb):
		return cb.err
	case err != nil:
		return fmt.Errorf("reading session events: %w", err)
	}
	return nil
}

// handedOn reports whether the session stream id is at or before last (the
// server's order: submissions by id, then seq, then the turn's end).
func handedOn(last, id string) bool {
	if last == "" {
		return false
	}
	ls, lp, _ := strings.Cut(last, ":")
	is, ip, _ := strings.Cut(id, ":")
	if is != ls {
		return is < ls
	}
	return pos(ip) <= pos(lp)
}

// pos orders a position within a turn: a seq, then "end".
func pos(p string) int64 {
	if p == "end" {
		return 1 << 62
	}
	n, _ := strconv.ParseInt(p, 10, 64)
	return n
}
