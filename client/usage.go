package client

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// UsageOptions selects the turns GET /v1/usage sums: those created From
// To (both included; zero = the beginning, now) of Principal ("" = the
// caller; an operator's "" = everyone).
type UsageOptions struct {
	Principal string
	From, To  time.Time
}

// UsageSum is the usage and estimated cost of some turns: Cost by
// currency (model and orchestration), Orchestration its orchestration part.
type UsageSum = contracts.UsageSum

// SessionUsage is one session's sum.
type SessionUsage = contracts.SessionUsage

// UsageReport is GET /v1/usage's answer: the total, by principal and by
// session (the costliest first, at most 500); Truncated when the sum
// stopped early.
type UsageReport = contracts.UsageReport

// Usage sums the usage and estimated cost of turns.
func (c *Client) Usage(ctx context.Context, opts UsageOptions) (UsageReport, error) {
	q := url.Values{}
	if opts.Principal != "" {
		q.Set("principal", opts.Principal)
	}
	if !opts.From.IsZero() {
		q.Set("from", opts.From.Format(time.RFC3339))
	}
	if !opts.To.IsZero() {
		q.Set("to", opts.To.Format(time.RFC3339))
	}
	var u UsageReport
	return u, c.call(ctx, request{route: "GET /v1/usage", query: q}, &u)
}

// MCP sends one JSON-RPC message to cairn's MCP endpoint (POST /v1/mcp,
// Streamable HTTP, stateless) and returns the messages of its answer:
// the response to a request (with any notifications sent before it), none
// for a notification. It is a passthrough: the JSON-RPC is the caller's.
func (c *Client) MCP(ctx context.Context, message json.RawMessage) ([]json.RawMessage, error) {
	r := request{route: "POST /v1/mcp", body: message,
		header: http.Header{"Accept": {"application/json, text/event-stream"}}}
	resp, err := c.open(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		return nil, nil
	case ct == "text/event-stream":
		var out []json.RawMessage
		sr := newSSEReader(resp.Body)
		for {
			m, err := sr.next()
			if err != nil {
				if len(out) > 0 && err == errStreamEnded {
					return out, nil
				}
				return out, fmt.Errorf("%s: reading the event stream: %w", r.describe(), err)
			}
			if (m.event == "" || m.event == "message") && json.Valid([]byte(m.data)) {
				out = append(out, json.RawMessage(m.data))
			}
		}
	}
	data, err := readAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: reading response: %w", r.describe(), &unreachableError{err})
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("%s: the answer is not JSON", r.describe())
	}
	return []json.RawMessage{data}, nil
}
