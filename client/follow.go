package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// ErrStop, returned by a follower's callback, ends the follow without an
// error.
var ErrStop = errors.New("stop following")

// FollowOptions say how Follow follows a turn.
type FollowOptions struct {
	// After resumes after the event with this seq (0: from the first).
	After int64
	// SSE streams the events (text/event-stream, resumed by
	// Last-Event-ID; on the WithStreamURL when set) instead of
	// long-polling. Where the server cannot stream (406 behind API
	// Gateway) Follow long-polls.
	SSE bool
	// Wait is each long-poll's wait (default 20 s; the server's most is
	// 25 s).
	Wait time.Duration
	// Progress is told of each reconnection in one line (Reconnecting);
	// nil: nobody.
	Progress io.Writer
}

// FollowEnd is where a follow ended: the turn's terminal phase ("" when
// the callback stopped it) and the seq of the last event handed on.
type FollowEnd struct {
	Phase contracts.Phase
	Last  int64
}

// callbackError carries the callback's own error out of a follower.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

// DefaultWait is a follower's long-poll wait.
const DefaultWait = 20 * time.Second

// streamIdle ends a stream that sent nothing, not even the keep-alive
// comment the API sends every 15 s, for this long: the server is gone.
const streamIdle = 45 * time.Second

// Follow hands each event of a turn after opts.After to fn, in order and
// once each, until the turn ended (every event handed on), fn returns an
// error (returned; ErrStop: nil), ctx ends or the server stays away past
// the reconnect bound. When the server goes away (a restart) it
// reconnects and resumes after the last event fn got (Reconnecting), by
// long-poll (?after=) or, with opts.SSE, by Last-Event-ID. Errors reading
// the events are wrapped "reading events: …"; fn's are returned as they
// are.
func (c *Client) Follow(ctx context.Context, sessionID, subID string, opts FollowOptions, fn func(contracts.Event) error) (FollowEnd, error) {
	end := FollowEnd{Last: opts.After}
	var err error
	if opts.SSE {
		var poll bool
		if poll, err = c.followSSE(ctx, sessionID, subID, opts, &end, fn); poll {
			opts.After = end.Last
			err = c.followPoll(ctx, sessionID, subID, opts, &end, fn)
		}
	} else {
		err = c.followPoll(ctx, sessionID, subID, opts, &end, fn)
	}
	var cb *callbackError
	switch {
	case errors.As(err, &cb) && errors.Is(cb.err, ErrStop):
		return end, nil
	case errors.As(err, &cb):
		return end, cb.err
	case err != nil:
		return end, fmt.Errorf("reading events: %w", err)
	}
	return end, err
}

// deliver hands ev to fn unless it was handed on already.
func deliver(ev contracts.Event, end *FollowEnd, fn func(contracts.Event) error) error {
	if ev.Seq <= end.Last {
		return nil
	}
	if err := fn(ev); err != nil {
		return &callbackError{err}
	}
	end.Last = ev.Seq
	return nil
}

func (c *Client) followPoll(ctx context.Context, sessionID, subID string, opts FollowOptions, end *FollowEnd, fn func(contracts.Event) error) error {
	wait := opts.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	resume := func() string { return fmt.Sprintf(", resuming after event %d", end.Last) }
	for {
		var page EventsPage
		err := c.Reconnecting(ctx, opts.Progress, resume, func() (err error) {
			page, err = c.Events(ctx, sessionID, subID, EventsOptions{After: end.Last, Wait: wait})
			return err
		})
		if err != nil {
			return err
		}
		for _, ev := range page.Events {
			if err := deliver(ev, end, fn); err != nil {
				return err
			}
		}
		end.Last = max(end.Last, page.Next)
		if page.Done {
			end.Phase = page.Phase
			return nil
		}
	}
}

// followSSE follows by server-sent events; poll reports that the server
// cannot stream (the caller long-polls instead).
func (c *Client) followSSE(ctx context.Context, sessionID, subID string, opts FollowOptions, end *FollowEnd, fn func(contracts.Event) error) (poll bool, err error) {
	resume := func() string { return fmt.Sprintf(", resuming after event %d", end.Last) }
	open := func() (*http.Response, error) {
		h := http.Header{"Accept": {"text/event-stream"}}
		if end.Last > 0 {
			h.Set("Last-Event-ID", strconv.FormatInt(end.Last, 10))
		}
		return c.openStream(ctx, request{route: "GET /v1/sessions/{id}/submissions/{sid}/events", args: []string{sessionID, subID}, header: h, stream: true})
	}
	return c.follow(ctx, opts.Progress, resume, open, func(m sseMessage) (bool, error) {
		switch m.event {
		case "end":
			var e struct {
				Phase contracts.Phase `json:"phase"`
			}
			if err := json.Unmarshal([]byte(m.data), &e); err != nil {
				return false, fmt.Errorf("the end message: %w", err)
			}
			end.Phase = e.Phase
			return true, nil
		case "message", "":
			return false, nil
		}
		var ev contracts.Event
		if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
			return false, fmt.Errorf("a %s message: %w", m.event, err)
		}
		return false, deliver(ev, end, fn)
	})
}

// errCannotStream: the server answered an event stream request with
// something else (406, or JSON).
var errCannotStream = errors.New("the server does not stream events here")

// openStream opens an event stream: a 2xx text/event-stream answer.
func (c *Client) openStream(ctx context.Context, r request) (*http.Response, error) {
	resp, err := c.open(ctx, r)
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotAcceptable {
		return nil, fmt.Errorf("%w: %w", errCannotStream, err)
	}
	if err != nil {
		return nil, err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answered %s", errCannotStream, r.describe(), ct)
	}
	return resp, nil
}

// follow opens streams (open, reconnecting) and hands their messages to
// handle until it reports done or fails. A stream that breaks is
// reconnected (after a backoff, saying so on progress); one the server
// ended ("expired") is reopened at once; an "error" message is the API
// error it carries. poll reports errCannotStream (err says why).
func (c *Client) follow(ctx context.Context, progress io.Writer, resume func() string, open func() (*http.Response, error), handle func(sseMessage) (bool, error)) (poll bool, err error) {
	var resp *http.Response
	call := func() (err error) { resp, err = open(); return err }
	err = c.Reconnecting(ctx, progress, resume, call)
	for {
		if errors.Is(err, errCannotStream) {
			return true, err
		}
		if err != nil {
			return false, err
		}
		done, err := c.readStream(ctx, resp, handle)
		resp.Body.Close()
		var u *unreachableError
		switch {
		case done || ctx.Err() != nil:
			return false, ctx.Err()
		case errors.Is(err, errExpired):
			err = c.Reconnecting(ctx, progress, resume, call)
		case errors.As(err, &u) || (err != nil && c.retryable(err)):
			err = c.reconnect(ctx, progress, resume, err, call)
		default:
			return false, err
		}
	}
}

// errExpired: the server ended the stream after its longest duration.
var errExpired = errors.New("the event stream expired")

// readStream hands resp's messages to handle; a stream silent for
// streamIdle counts as broken.
func (c *Client) readStream(ctx context.Context, resp *http.Response, handle func(sseMessage) (bool, error)) (bool, error) {
	idle := time.AfterFunc(streamIdle, func() { resp.Body.Close() })
	defer idle.Stop()
	sr := newSSEReader(&idleReader{r: resp.Body, idle: idle})
	for {
		m, err := sr.next()
		if err != nil {
			return false, &unreachableError{err}
		}
		switch m.event {
		case "expired":
			return false, errExpired
		case "error":
			return false, streamError(m.data)
		}
		if done, err := handle(m); done || err != nil {
			return done, err
		}
	}
}

// idleReader restarts the idle timer on every read that got bytes.
type idleReader struct {
	r    io.Reader
	idle *time.Timer
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.idle.Reset(streamIdle)
	}
	return n, err
}

// streamError is the *Error an "error" message of a stream carries
// (statuses as the API maps its codes).
func streamError(data string) error {
	var eb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &eb); err != nil || eb.Error.Code == "" {
		return &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "the event stream sent an error: " + clip(data, 200)}
	}
	status := map[string]int{"not_found": 404, "invalid_request": 400, "too_large": 413, "conflict": 409,
		"upstream_unavailable": 502, "forbidden": 403, "not_acceptable": 406, "unauthorized": 401}[eb.Error.Code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	return &Error{Status: status, Code: eb.Error.Code, Message: eb.Error.Message}
}
