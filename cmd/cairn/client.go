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
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// client speaks the HTTP API v1, to a server or in-process (embedded).
type client struct {
	base  string
	token string
	http  *http.Client
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
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading response: %w", method, path, err)
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
	var s contracts.Submission
	return s, c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(sessionID)+"/submissions", map[string]string{"prompt": prompt},
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
	return 1
}
