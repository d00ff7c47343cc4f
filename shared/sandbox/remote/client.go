package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultRetries        = 3
	DefaultConnectTimeout = 3 * time.Second
	// ExecDefaultTimeout is the command timeout assumed for an Exec or
	// RunScript request without one (local.DefaultTimeout).
	ExecDefaultTimeout = 60 * time.Second
	// ExecMargin is added to a command's timeout for the call's deadline:
	// killing the group, draining output, the round trip.
	ExecMargin = 10 * time.Second
)

// maxResponse bounds a response body read by the client.
const maxResponse = 64 << 20

// Backoff between retries: 50ms, 100ms, 200ms, … up to 1s, with jitter.
const (
	backoffBase = 50 * time.Millisecond
	backoffMax  = time.Second
)

// Options configures a Client. Zero fields take the defaults above.
type Options struct {
	// HTTPClient sends the requests. Default: a client of its own,
	// NewHTTPClient(ConnectTimeout). (ConnectTimeout does not apply to a
	// given client.)
	HTTPClient *http.Client
	// Timeout bounds one call, retries included (default 30s). Exec and
	// RunScript get max(Timeout, command timeout + ExecMargin).
	Timeout time.Duration
	// Retries is how many times a retryable call is repeated (default 3;
	// negative: never).
	Retries int
	// ConnectTimeout bounds establishing a connection (default 3s).
	ConnectTimeout time.Duration
	// CertSHA256, when set, is the hex SHA-256 of the sandbox's TLS
	// certificate (DER; contracts.SandboxRecord.CertSHA256): the endpoint
	// must be https, and a connection is used only if the server presents
	// exactly that certificate — no CA, no host name, no dates; the TLS
	// handshake proves the server holds its key. Any other certificate is
	// ErrUnavailable, never retried, and nothing is sent (the client never
	// falls back to plain HTTP). The client then has a transport of its
	// own (HTTPClient's cloned, if given, with the pin set), so no
	// connection made under another pin is ever reused.
	CertSHA256 string
}

// Client is the SandboxAPI of a sandboxd server. It is safe for concurrent
// use. The token is sent on every request and appears in no error, log
// line or formatted value of the Client.
type Client struct {
	endpoint string
	host     string // the endpoint's host and port: what its spans name
	auth     string // "Bearer <token>"
	hc       *http.Client
	timeout  time.Duration
	retries  int
}

var (
	_ contracts.SandboxAPI = (*Client)(nil)
	_ contracts.CallLedger = (*Client)(nil)
)

// New returns a client of the sandboxd at endpoint (a base URL such as
// "http://10.0.1.7:7070") authenticating with token. It does not connect;
// see Health.
func New(endpoint, token string, opts Options) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("remote sandbox: endpoint %q is not an http(s) base URL: %w", redactURL(endpoint), contracts.ErrInvalid)
	}
	if token == "" || strings.ContainsAny(token, " \r\n") {
		return nil, fmt.Errorf("remote sandbox: empty or malformed token: %w", contracts.ErrInvalid)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	hc := opts.HTTPClient
	if opts.CertSHA256 != "" {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("remote sandbox: endpoint %q: a pinned certificate needs an https endpoint: %w", redactURL(endpoint), contracts.ErrInvalid)
		}
		if hc, err = pinnedHTTPClient(hc, opts.ConnectTimeout, opts.CertSHA256); err != nil {
			return nil, err
		}
	}
	if hc == nil {
		hc = NewHTTPClient(opts.ConnectTimeout)
	}
	return &Client{
		endpoint: strings.TrimRight(u.String(), "/"),
		host:     u.Host,
		auth:     "Bearer " + token,
		hc:       hc,
		timeout:  opts.Timeout,
		retries:  max(opts.Retries, 0),
	}, nil
}

// NewHTTPClient returns the HTTP client of sandboxd clients: the one New
// makes when Options.HTTPClient is nil, and the one a provider makes once
// and shares among the Clients it hands out (Options.HTTPClient), so that
// the many short-lived Clients of a long-lived process (one per Acquire)
// reuse connections instead of each keeping its own idle pool.
//
// It uses no proxy (sandboxes are on loopback or private IPs) and follows
// no redirect (a redirect would carry the bearer token elsewhere).
// Connecting is bounded by connectTimeout (≤ 0: DefaultConnectTimeout) and
// a TLS handshake by 10s; it keeps at most 64 idle connections, 8 per
// sandbox, each for 90s.
func NewHTTPClient(connectTimeout time.Duration) *http.Client {
	if connectTimeout <= 0 {
		connectTimeout = DefaultConnectTimeout
	}
	d := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
			ForceAttemptHTTP2:   true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// String names the endpoint, never the token.
func (c Client) String() string { return "remote.Client(" + c.endpoint + ")" }

// GoString names the endpoint, never the token.
func (c Client) GoString() string { return c.String() }

// Close releases idle connections. The client stays usable.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// Health checks that sandboxd answers and speaks this protocol version.
// Any failure but the caller's own context ending wraps
// contracts.ErrUnavailable. It is retried like a read.
func (c *Client) Health(ctx context.Context) error {
	var h proto.Health
	err := c.do(ctx, request{name: "health", method: http.MethodGet, path: proto.PathHealth, retry: retryAll, timeout: c.timeout}, &h)
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil && errors.Is(err, contracts.ErrUnavailable):
		return err
	case err != nil:
		return fmt.Errorf("remote sandbox %s: health: %w: %w", c.endpoint, contracts.ErrUnavailable, err)
	case !h.OK || h.Protocol != proto.Version:
		return fmt.Errorf("remote sandbox %s: health: not ok or protocol %d (want %d): %w", c.endpoint, h.Protocol, proto.Version, contracts.ErrUnavailable)
	}
	return nil
}

// CallOutcome asks sandboxd what it knows of a tool call id (the
// effect-once query of contracts.CallLedger). It is retried like a read.
func (c *Client) CallOutcome(ctx context.Context, callID string) (contracts.CallOutcome, error) {
	if callID == "" {
		return contracts.CallOutcome{}, fmt.Errorf("remote sandbox: call outcome: empty call id: %w", contracts.ErrInvalid)
	}
	var out contracts.CallOutcome
	err := c.do(ctx, request{name: "calls", method: http.MethodGet, path: proto.CallPath(callID), retry: retryAll, timeout: c.timeout}, &out)
	if err != nil {
		return contracts.CallOutcome{}, err
	}
	return out, nil
}

// retryMode says when a failed request may be sent again.
type retryMode int

const (
	// retryDial: only when no connection could be made (the request never
	// left): mutating calls without a call id, and remove.
	retryDial retryMode = iota
	// retryAll: also after a connection error or a 502/503/504 answer:
	// idempotent calls, and mutating calls with a call id (sandboxd
	// answers a repeat with the recorded outcome).
	retryAll
)

// request is one protocol request.
type request struct {
	name    string // method name for errors
	method  string // HTTP method
	path    string
	body    []byte
	retry   retryMode
	timeout time.Duration
}

// do sends rq (retrying as rq.retry allows) and decodes a 200 answer into
// out. The whole call, retries included, is one client span (trace.go).
func (c *Client) do(ctx context.Context, rq request, out any) (err error) {
	ctx, cancel := context.WithTimeout(ctx, rq.timeout)
	defer cancel()
	ctx, rt := c.roundTrip(ctx, rq.name)
	defer func() { rt.end(err) }()
	for attempt := 0; ; attempt++ {
		rt.attempt(attempt + 1)
		body, retryable, err := c.send(ctx, rq, rt)
		if err == nil {
			if err := json.Unmarshal(body, out); err != nil {
				return fmt.Errorf("remote sandbox %s: decoding the result: %v: %w", rq.name, err, contracts.ErrUnavailable)
			}
			return nil
		}
		if !retryable || attempt >= c.retries {
			return err
		}
		rt.retry(attempt+1, err)
		if werr := wait(ctx, attempt); werr != nil {
			return c.ctxError(rq.name, werr)
		}
	}
}

// send makes one attempt. It returns the body of a 200 answer, or the
// error and whether it may be retried.
func (c *Client) send(ctx context.Context, rq request, rt roundTrip) (body []byte, retryable bool, err error) {
	var rd io.Reader
	if rq.body != nil {
		rd = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, c.endpoint+rq.path, rd)
	if err != nil {
		return nil, false, fmt.Errorf("remote sandbox %s: %v: %w", rq.name, err, contracts.ErrInvalid)
	}
	req.Header.Set(proto.HeaderProtocol, proto.VersionHeader)
	req.Header.Set(proto.HeaderAuthorization, c.auth)
	req.Header.Set("User-Agent", "cairn-sandboxremote/1")
	if rq.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rt.inject(ctx, req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, c.ctxError(rq.name, ctx.Err())
		}
		if pinMismatch(err) { // another server at this address: nothing was sent, asking again changes nothing
			return nil, false, fmt.Errorf("remote sandbox %s: %w: %w", rq.name, contracts.ErrUnavailable, err)
		}
		return nil, rq.retry == retryAll || dialFailed(err),
			fmt.Errorf("remote sandbox %s: %w: %v", rq.name, contracts.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	rt.status(resp.StatusCode)
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, c.ctxError(rq.name, ctx.Err())
		}
		return nil, rq.retry == retryAll, fmt.Errorf("remote sandbox %s: reading the answer: %w: %v", rq.name, contracts.ErrUnavailable, err)
	}
	if len(body) > maxResponse {
		return nil, false, fmt.Errorf("remote sandbox %s: answer exceeds %d bytes: %w", rq.name, maxResponse, contracts.ErrTooLarge)
	}
	if resp.StatusCode == http.StatusOK {
		return body, false, nil
	}
	retryable = rq.retry == retryAll && (resp.StatusCode == http.StatusBadGateway ||
		resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout)
	return nil, retryable, decodeError(rq.name, resp.StatusCode, body)
}

// decodeError turns an error answer back into an error matching the
// contracts sentinel of its code. An answer that is not a protocol error
// (a proxy's page) is classified by status.
func decodeError(name string, status int, body []byte) error {
	var eb proto.ErrorBody
	if err := json.Unmarshal(body, &eb); err == nil && eb.Error.Code != "" {
		return proto.Err(eb.Error.Code, eb.Error.Message)
	}
	snippet := strings.TrimSpace(string(body[:min(len(body), 200)]))
	return fmt.Errorf("remote sandbox %s: HTTP %d %s: %w", name, status, snippet, proto.Err(codeOfStatus(status), http.StatusText(status)))
}

// codeOfStatus guesses the wire code of a status without a protocol body.
func codeOfStatus(status int) string {
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return proto.CodeUnavailable
	case http.StatusGatewayTimeout:
		return proto.CodeTimeout
	case http.StatusUnauthorized:
		return proto.CodeUnauthorized
	case http.StatusForbidden:
		return proto.CodePermission
	case http.StatusNotFound:
		return proto.CodeNotFound
	case http.StatusRequestEntityTooLarge:
		return proto.CodeTooLarge
	case http.StatusConflict:
		return proto.CodeConflict
	}
	if status >= 400 && status < 500 {
		return proto.CodeInvalid
	}
	return proto.CodeInternal
}

// ctxError reports a call stopped by its context: a deadline (the
// caller's or the call's Timeout) is contracts.ErrTimeout (and still
// matches context.DeadlineExceeded); a cancellation is context.Canceled.
func (c *Client) ctxError(name string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("remote sandbox %s: deadline exceeded: %w (%w)", name, contracts.ErrTimeout, err)
	}
	return fmt.Errorf("remote sandbox %s: %w", name, err)
}

// dialFailed reports whether err happened while connecting, so the request
// was never sent.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// wait sleeps the backoff before retry attempt+1, or returns ctx's error.
func wait(ctx context.Context, attempt int) error {
	d := min(backoffBase<<attempt, backoffMax)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// redactURL drops userinfo from a URL for error messages.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}
