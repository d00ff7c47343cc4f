package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// client speaks the HTTP API v1, to a server or in-process (embedded).
type client struct {
	base  string
	token string
	http  *http.Client
	// tokenFile, when set, is where token came from (DATA/token): a
	// follower re-reads it when it reconnects, since a restarted server may
	// serve a new token.
	tokenFile string
	// giveUpAfter bounds reconnecting; 0 = ReconnectFor.
	giveUpAfter time.Duration
}

// apiError is an API error response.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message) }

func (c *client) do(ctx context.Context, method, path string, body any, hdr map[string]string, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, &unreachableError{err})
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading response: %w", method, path, &unreachableError{err})
	}
	if resp.StatusCode >= 300 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(data, &eb)
		return &apiError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decoding response: %w", method, path, err)
		}
	}
	return nil
}

type sessionView struct {
	contracts.Session
	PendingApprovals []contracts.Approval `json:"pending_approvals"`
}

func (c *client) createSession(ctx context.Context, spec contracts.SessionSpec) (sessionView, error) {
	var s sessionView
	return s, c.do(ctx, "POST", "/v1/sessions", spec, nil, &s)
}

func (c *client) session(ctx context.Context, id string) (sessionView, error) {
	var s sessionView
	return s, c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(id), nil, nil, &s)
}

func (c *client) submit(ctx context.Context, sessionID, prompt, key string) (contracts.Submission, error) {
	return c.submitFrom(ctx, sessionID, prompt, key, "")
}

// submitFrom submits a turn that starts from node parent ("" = the head).
func (c *client) submitFrom(ctx context.Context, sessionID, prompt, key, parent string) (contracts.Submission, error) {
	var s contracts.Submission
	body := map[string]string{"prompt": prompt}
	if parent != "" {
		body["parent"] = parent
	}
	return s, c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(sessionID)+"/submissions", body,
		map[string]string{"Idempotency-Key": key}, &s)
}

func (c *client) submission(ctx context.Context, sessionID, subID string) (contracts.Submission, error) {
	var s contracts.Submission
	return s, c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(sessionID)+"/submissions/"+url.PathEscape(subID), nil, nil, &s)
}

type eventsPage struct {
	Events []contracts.Event `json:"events"`
	Next   int64             `json:"next"`
	Phase  contracts.Phase   `json:"phase"`
	Done   bool              `json:"done"`
}

func (c *client) events(ctx context.Context, sessionID, subID string, after int64, wait time.Duration) (eventsPage, error) {
	var p eventsPage
	path := fmt.Sprintf("/v1/sessions/%s/submissions/%s/events?after=%d&wait=%s", url.PathEscape(sessionID), url.PathEscape(subID), after, wait)
	return p, c.do(ctx, "GET", path, nil, nil, &p)
}

func (c *client) decide(ctx context.Context, sessionID, approvalID string, d contracts.Decision, reason string) (contracts.Approval, error) {
	var a contracts.Approval
	return a, c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(sessionID)+"/approvals/"+url.PathEscape(approvalID),
		map[string]string{"decision": string(d), "reason": reason}, nil, &a)
}

// inProcess is an http.RoundTripper that calls a handler directly: the
// embedded CLI uses exactly the API a server would serve.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// remoteClient builds a client for a dev server address.
func remoteClient(addr, token string) *client {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return &client{base: strings.TrimRight(addr, "/"), token: token, http: &http.Client{Timeout: 90 * time.Second}}
}

func exitCode(err error) int {
	var pe *parkedError
	if errors.As(err, &pe) {
		return 3
	}
	if errors.Is(err, errDetached) {
		return 130
	}
	return 1
}

// unreachableError is a request that got no complete answer: the server
// refused the connection, reset it or closed it mid-answer (it stopped or
// restarted).
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// ReconnectFor bounds how long a follower keeps trying to reach a server
// that went away (a restart takes seconds).
const ReconnectFor = 60 * time.Second

// reconnectBackoff is the first wait between reconnection attempts; each
// next one doubles, up to 5 s.
const reconnectBackoff = 100 * time.Millisecond

// retryable reports whether err may heal by reconnecting: the server could
// not be reached or cut its answer, answered 502–504, or (when the token
// came from a file a restarted server may have rewritten) rejected the
// token.
func (c *client) retryable(err error) bool {
	var u *unreachableError
	var ae *apiError
	switch {
	case errors.As(err, &u):
		return true
	case errors.As(err, &ae):
		return ae.Status == http.StatusBadGateway || ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusGatewayTimeout ||
			(ae.Status == http.StatusUnauthorized && c.tokenFile != "")
	}
	return false
}

// reloadToken re-reads the token file, if the token came from one.
func (c *client) reloadToken() {
	if c.tokenFile == "" {
		return
	}
	if b, err := os.ReadFile(c.tokenFile); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			c.token = t
		}
	}
}

// reconnecting runs call (an idempotent request); if the server went away
// it reconnects: it backs off (100 ms doubling to 5 s), re-reads the token
// file and calls again, for at most ReconnectFor in all, and tells w in one
// line ("… reconnecting… reconnected after 1.2s, resuming after event 17";
// resume adds the last part). Errors that reconnecting cannot heal, and
// the last error once the time is up, are returned.
func (c *client) reconnecting(ctx context.Context, w io.Writer, resume func() string, call func() error) error {
	err := call()
	if err == nil || ctx.Err() != nil || !c.retryable(err) {
		return err
	}
	start, bound := time.Now(), c.giveUpAfter
	if bound <= 0 {
		bound = ReconnectFor
	}
	fmt.Fprintf(w, "  ↻ lost the server (%s); reconnecting… ", reason(err))
	delay := reconnectBackoff
	for {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			fmt.Fprintln(w, "stopped")
			return ctx.Err()
		case <-t.C:
		}
		c.reloadToken()
		err = call()
		switch {
		case err == nil:
			fmt.Fprintf(w, "reconnected after %s%s\n", time.Since(start).Round(100*time.Millisecond), resume())
			return nil
		case ctx.Err() != nil:
			fmt.Fprintln(w, "stopped")
			return ctx.Err()
		case !c.retryable(err):
			fmt.Fprintln(w, "failed")
			return err
		case time.Since(start)+delay > bound:
			fmt.Fprintf(w, "gave up after %s\n", time.Since(start).Round(100*time.Millisecond))
			return fmt.Errorf("the server did not come back within %s: %w", bound, err)
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// reason names why a request failed, in a few words.
func reason(err error) string {
	var errno syscall.Errno
	var ae *apiError
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		return "token rejected; re-reading the token file"
	case errors.As(err, &ae):
		return http.StatusText(ae.Status)
	}
	return err.Error()
}
