package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Defaults of a Connector.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 5 * time.Minute
	// DefaultListTimeout bounds listing a server's tools, connecting
	// included: it happens while a session is created, inside an API
	// request (API Gateway gives up at 29 s).
	DefaultListTimeout = 20 * time.Second
	// protocolVersion is asked for first: the version the servers of
	// today speak (newer drafts are negotiated down by the SDK anyway, at
	// the cost of a round trip).
	protocolVersion = "2025-11-25"
)

// Connector is the contracts.MCPConnector over the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): one connection per list or
// call, closed when it returns, so nothing of a server outlives the call.
type Connector struct {
	// Resolve turns a header's secret reference into its value
	// (secrets.Resolver.Resolve); nil refuses servers with headers.
	Resolve func(ctx context.Context, ref string) (string, error)
	// HTTP is the client remote servers are reached with (its transport;
	// nil = http.DefaultTransport).
	HTTP *http.Client
	// ConnectTimeout bounds connecting (0 = DefaultConnectTimeout);
	// CallTimeout a whole call (0 = DefaultCallTimeout): a server that
	// does not answer is an error result, never a stuck turn.
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
	ListTimeout    time.Duration // 0 = DefaultListTimeout
}

var _ contracts.MCPConnector = (*Connector)(nil)

// ListTools lists s's tools, every page, as the session will pin them.
func (c *Connector) ListTools(ctx context.Context, s contracts.MCPServer, host contracts.MCPHost) ([]contracts.MCPTool, error) {
	if len(s.Command) > 0 {
		return c.listInSandbox(ctx, s, host)
	}
	ctx, cancel := context.WithTimeout(ctx, c.listTimeout())
	defer cancel()
	cs, err := c.connect(ctx, s)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	var listed []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: listing tools: %w", s.Name, err)
		}
		listed = append(listed, t)
	}
	return pinAll(s, listed)
}

// pinAll is the listed tools of s as the session pins them: only those
// s.Tools names (when it names any), each of which must be there.
func pinAll(s contracts.MCPServer, listed []*sdk.Tool) ([]contracts.MCPTool, error) {
	var out []contracts.MCPTool
	seen := map[string]string{}
	for _, t := range listed {
		if len(s.Tools) > 0 && !slices.Contains(s.Tools, t.Name) {
			continue
		}
		tool, err := pinned(s, t)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[tool.Name]; dup {
			return nil, fmt.Errorf("mcp server %s: tools %q and %q are both offered as %s: %w", s.Name, other, t.Name, tool.Name, contracts.ErrInvalid)
		}
		seen[tool.Name] = t.Name
		out = append(out, tool)
	}
	for _, want := range s.Tools {
		if !slices.ContainsFunc(out, func(t contracts.MCPTool) bool { return t.Tool == want }) {
			return nil, fmt.Errorf("mcp server %s has no tool %q (tools names it): %w", s.Name, want, contracts.ErrInvalid)
		}
	}
	return out, nil
}

// CallTool calls tool on s. A server that cannot be reached, answers with a
// protocol error or not within CallTimeout is an IsError result naming it;
// only the caller's own context ending (a cancel, a lost lease) is an
// error.
func (c *Connector) CallTool(ctx context.Context, call contracts.MCPCall) (contracts.ToolResult, error) {
	s, tool, meta := call.Server, call.Tool, call.Meta
	args := map[string]any{} // never null: servers refuse "arguments": null
	if len(call.Input) > 0 && string(call.Input) != "null" {
		if err := json.Unmarshal(call.Input, &args); err != nil {
			return contracts.ToolResult{Content: fmt.Sprintf("invalid input for MCP tool %s of server %s: %v", tool, s.Name, err), IsError: true}, nil
		}
	}
	if len(s.Command) > 0 {
		return c.callInSandbox(ctx, call, args)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.connectTimeout()+c.callTimeout())
	defer cancel()
	cs, err := c.connect(callCtx, s)
	if err != nil {
		if ctx.Err() != nil {
			return contracts.ToolResult{}, ctx.Err()
		}
		// Not connected: the call was not sent.
		return contracts.ToolResult{Content: fmt.Sprintf("MCP server %s is unavailable: %v (the call to %s was not made)", s.Name, err, tool), IsError: true}, nil
	}
	defer cs.close()
	m := sdk.Meta{}
	for k, v := range meta {
		m[k] = v
	}
	res, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: tool, Arguments: args, Meta: m})
	if err != nil {
		if ctx.Err() != nil {
			return contracts.ToolResult{}, ctx.Err()
		}
		why := err.Error()
		if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			why = fmt.Sprintf("no answer within %s", c.connectTimeout()+c.callTimeout())
		}
		return contracts.ToolResult{Content: fmt.Sprintf("MCP server %s failed the call to %s: %s (it may or may not have run)", s.Name, tool, why), IsError: true}, nil
	}
	out := result(res)
	// A server that announces tool list changes is asked for its list
	// again (on this connection) and compared with the pin.
	if init := cs.InitializeResult(); init != nil && init.Capabilities != nil && init.Capabilities.Tools != nil && init.Capabilities.Tools.ListChanged {
		lctx, cancel := context.WithTimeout(ctx, c.listTimeout())
		var listed []*sdk.Tool
		var lerr error
		for t, err := range cs.Tools(lctx, nil) {
			if err != nil {
				lerr = err
				break
			}
			listed = append(listed, t)
		}
		cancel()
		if lerr == nil {
			out.Content += changed(s, call.Pinned, listed)
		}
	}
	return out, nil
}

func (c *Connector) listTimeout() time.Duration {
	if c.ListTimeout <= 0 {
		return DefaultListTimeout
	}
	return c.ListTimeout
}

// session is a client session and the context its transport's streams
// live in (the SSE transport's stream is the Connect context's: it must
// outlive Connect, until close).
type session struct {
	*sdk.ClientSession
	cancel context.CancelFunc
}

func (s session) close() {
	s.ClientSession.Close()
	s.cancel()
}

// connect opens a client session to s, giving up after ConnectTimeout.
func (c *Connector) connect(ctx context.Context, s contracts.MCPServer) (session, error) {
	if s.URL == "" {
		return session{}, fmt.Errorf("mcp server %s: stdio servers (command, in_sandbox) are not served by this connector: %w", s.Name, contracts.ErrInvalid)
	}
	hc, err := c.client(ctx, s)
	if err != nil {
		return session{}, err
	}
	var t sdk.Transport
	switch s.Transport {
	case "", contracts.MCPStreamable:
		// No reconnects: a connection lives for one call, and a call whose
		// stream broke is reported (outcome unknown), not resumed blind.
		t = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
	case contracts.MCPSSE:
		t = &sdk.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc}
	default:
		return session{}, fmt.Errorf("mcp server %s: transport %q: %w", s.Name, s.Transport, contracts.ErrInvalid)
	}
	cctx, cancel := context.WithCancel(ctx)
	late := time.AfterFunc(c.connectTimeout(), cancel) // only Connect is bounded by it
	client := newClient()
	cs, err := client.Connect(cctx, t, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if !late.Stop() && err == nil {
		err = fmt.Errorf("no answer within %s", c.connectTimeout())
		cs.Close()
	}
	if err != nil {
		cancel()
		return session{}, fmt.Errorf("mcp server %s: connecting to %s: %w", s.Name, s.URL, err)
	}
	return session{ClientSession: cs, cancel: cancel}, nil
}

// client is the HTTP client for s: the base transport with s's headers,
// their secret references resolved now (and only held in memory for this
// connection).
func (c *Connector) client(ctx context.Context, s contracts.MCPServer) (*http.Client, error) {
	base := http.DefaultTransport
	if c.HTTP != nil && c.HTTP.Transport != nil {
		base = c.HTTP.Transport
	}
	if len(s.Headers) == 0 {
		return &http.Client{Transport: base}, nil
	}
	if c.Resolve == nil {
		return nil, fmt.Errorf("mcp server %s: headers need secret references resolved, and none can be here: %w", s.Name, contracts.ErrInvalid)
	}
	h := http.Header{}
	for k, ref := range s.Headers {
		v, err := c.Resolve(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: header %s: %w", s.Name, k, err)
		}
		h.Set(k, v)
	}
	return &http.Client{Transport: headers{base: base, h: h}}, nil
}

func (c *Connector) connectTimeout() time.Duration {
	if c.ConnectTimeout <= 0 {
		return DefaultConnectTimeout
	}
	return c.ConnectTimeout
}

func (c *Connector) callTimeout() time.Duration {
	if c.CallTimeout <= 0 {
		return DefaultCallTimeout
	}
	return c.CallTimeout
}

// headers adds fixed headers to every request.
type headers struct {
	base http.RoundTripper
	h    http.Header
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.h {
		r.Header[k] = vs
	}
	return t.base.RoundTrip(r)
}
