package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Client calls one cairn API. Its methods are safe for concurrent use.
type Client struct {
	base   string // scheme://host[/prefix], no trailing slash
	stream string // base of SSE follows ("" = base)
	hc     *http.Client

	mu        sync.Mutex
	token     string // bearer token ("" = none)
	tokenFile string // where token is re-read from when reconnecting

	creds  aws.CredentialsProvider // SigV4 signing, when set
	region string

	reconnectFor time.Duration
	callTimeout  time.Duration
}

// Option configures a Client (New).
type Option func(*Client)

// DefaultCallTimeout bounds one request that is not an event stream (a
// long-poll waits at most 25 s on the server).
const DefaultCallTimeout = 90 * time.Second

// embeddedBase is the base URL of a client of an in-process handler given
// none.
const embeddedBase = "http://embedded"

// New returns a client of the API at baseURL ("http://127.0.0.1:8080", an
// API Gateway stage URL). With WithHandler, baseURL may be "".
func New(baseURL string, opts ...Option) (*Client, error) {
	c := &Client{reconnectFor: ReconnectFor, callTimeout: DefaultCallTimeout}
	for _, o := range opts {
		o(c)
	}
	if baseURL == "" && c.hc != nil && isInProcess(c.hc.Transport) {
		baseURL = embeddedBase
	}
	base, err := checkBase("base URL", baseURL)
	if err != nil {
		return nil, err
	}
	c.base = base
	if c.stream != "" {
		if c.stream, err = checkBase("stream URL", c.stream); err != nil {
			return nil, err
		}
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.creds != nil && c.region == "" {
		return nil, errors.New("client: WithSigV4 needs a region")
	}
	if c.tokenFile != "" && c.token == "" {
		c.reloadToken()
	}
	return c, nil
}

func checkBase(what, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("client: %s %q: want http(s)://host[:port][/prefix]", what, raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// WithHTTPClient makes the client's requests with hc (default: a client
// with http.DefaultTransport). Leave hc.Timeout zero if you follow events
// over SSE: the client bounds each other call itself (DefaultCallTimeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithBearer sends Authorization: Bearer token (a local token of `cairn
// dev`, a JWT for API Gateway's JWT authorizer).
func WithBearer(token string) Option { return func(c *Client) { c.token = token } }

// WithTokenFile reads the bearer token from path (DATA/token of `cairn
// dev`, see TokenPath) and reads it again whenever a request fails with
// 401 while reconnecting: a restarted server may serve a new token. A
// token given by WithBearer is used first.
func WithTokenFile(path string) Option { return func(c *Client) { c.tokenFile = path } }

// WithSigV4 signs every request with AWS Signature Version 4 for the
// API Gateway's IAM authorisation (service execute-api; SSE follows on a
// WithStreamURL, a Lambda function URL: service lambda) in region, with
// credentials from creds (wrapped in an aws.CredentialsCache unless it is
// one). No bearer token is sent then.
func WithSigV4(creds aws.CredentialsProvider, region string) Option {
	return func(c *Client) {
		if _, ok := creds.(*aws.CredentialsCache); !ok && creds != nil {
			creds = aws.NewCredentialsCache(creds)
		}
		c.creds, c.region = creds, region
	}
}

// WithStreamURL sends server-sent-event follows (Follow with SSE,
// FollowSession) to streamURL — the API's streaming function URL, where
// API Gateway cannot stream — instead of the base URL. With WithSigV4
// they are signed for service lambda.
func WithStreamURL(streamURL string) Option { return func(c *Client) { c.stream = streamURL } }

// WithReconnectFor bounds how long a follower (and Reconnecting) keeps
// trying to reach a server that went away (default ReconnectFor).
func WithReconnectFor(d time.Duration) Option { return func(c *Client) { c.reconnectFor = d } }

// WithCallTimeout bounds each request that is not an event stream
// (default DefaultCallTimeout; 0 = only the context's deadline).
func WithCallTimeout(d time.Duration) Option { return func(c *Client) { c.callTimeout = d } }

// BaseURL is the URL the client's requests go to.
func (c *Client) BaseURL() string { return c.base }

// Error is an error answer of the API: its HTTP status and the code and
// message of its {"error":{"code","message"}} body. Match it with
// errors.As.
type Error struct {
	Status  int
	Code    string // "not_found", "invalid_request", "conflict", "unauthorized", …
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message) }

// unreachableError is a request that got no complete answer: the server
// refused the connection, reset it or closed it mid-answer (it stopped or
// restarted).
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// maxAnswer bounds one answer's body (an API page is at most 4 MiB).
const maxAnswer = 32 << 20

// request is one API request: a route of the table (routes) with its
// path's wildcards, in order.
type request struct {
	route  string
	args   []string
	query  url.Values
	body   any // JSON; nil = none
	header http.Header
	stream bool // an event stream: the stream URL, no call timeout
}

// call makes r and decodes a 2xx answer into out (nil: dropped).
func (c *Client) call(ctx context.Context, r request, out any) error {
	resp, err := c.open(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		return nil
	}
	data, err := readAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: reading response: %w", r.describe(), &unreachableError{err})
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: decoding response: %w", r.describe(), err)
	}
	return nil
}

// open sends r and returns the answer if it is a 2xx; otherwise its
// *Error (or the transport's error, as unreachable).
func (c *Client) open(ctx context.Context, r request) (*http.Response, error) {
	method, path, err := expand(r.route, r.args)
	if err != nil {
		return nil, err
	}
	if len(r.query) > 0 {
		path += "?" + r.query.Encode()
	}
	var body []byte
	if r.body != nil {
		if body, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("%s %s: encoding the body: %w", method, path, err)
		}
	}
	base, service := c.base, "execute-api"
	if r.stream && c.stream != "" {
		base, service = c.stream, "lambda"
	}
	cancel := context.CancelFunc(func() {})
	if !r.stream && c.callTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.callTimeout)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if err := c.authorize(req, body, service); err != nil {
		cancel()
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s %s: %w", method, path, &unreachableError{err})
	}
	if resp.StatusCode >= 300 {
		defer cancel()
		defer resp.Body.Close()
		data, err := readAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: reading response: %w", method, path, &unreachableError{err})
		}
		return nil, decodeError(resp.StatusCode, data)
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

func (r request) describe() string {
	method, path, _ := expand(r.route, r.args)
	if len(r.query) > 0 {
		path += "?" + r.query.Encode()
	}
	return method + " " + path
}

// decodeError is the *Error of an answer with status and body data.
func decodeError(status int, data []byte) *Error {
	var eb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	e := &Error{Status: status}
	if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
		e.Code, e.Message = eb.Error.Code, eb.Error.Message
	} else if text := strings.TrimSpace(string(data)); text != "" { // a proxy's page, not the API's
		e.Message = clip(text, 200)
	}
	return e
}

func readAll(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxAnswer+1))
	if err == nil && len(data) > maxAnswer {
		err = fmt.Errorf("answer over %d bytes", maxAnswer)
	}
	return data, err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// cancelBody releases a request's timeout once its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// Send sends req, whose URL is a path of the API ("/v1/mcp") with its
// query, to the client's server with the client's credentials, and returns
// the answer as is (any status), under the call timeout until its body is
// closed. It is the raw passthrough shared/mcp/serve's Config.API takes.
func (c *Client) Send(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
		body = b
	}
	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	if c.callTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.callTimeout)
	}
	full, err := http.NewRequestWithContext(ctx, req.Method, c.base+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	if body == nil {
		full.Body, full.ContentLength = http.NoBody, 0
	}
	full.Header = req.Header.Clone()
	if err := c.authorize(full, body, "execute-api"); err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.hc.Do(full)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}
