package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Stdio MCP servers (contracts.MCPHost): a session's server runs inside its
// sandbox as any command does — in the workspace, with the sandbox's
// scrubbed environment (HOME is the workspace), as the commands' user,
// under the spec's limits and the host's containment — but it is started
// on its first request and kept, one process per distinct command, for the
// sandbox's life: until Provider.Release or CloseMCP, or until it exits (the
// next request starts it again). When the runtime dies its servers die
// with it (the reaper's, or the process's, parent-death signal). Requests
// reach it through one MCP client session (the official Go SDK over its
// stdin and stdout); what it writes to stderr is kept, its tail quoted when
// it fails.

var _ contracts.MCPHost = (*Sandbox)(nil)

// MCPStartTimeout bounds starting a stdio server and its initialize
// handshake (a first `npx -y …` downloads the package).
const MCPStartTimeout = 3 * time.Minute

// MCPIdleTimeout stops a stdio server no request used for that long (the
// next request starts it again): servers of finished sessions do not
// live on. A variable for tests.
var MCPIdleTimeout = 10 * time.Minute

// stderrTail is how much of a server's stderr is kept.
const stderrTail = 4 << 10

// mcpHost holds one sandbox's (one session's) stdio servers.
type mcpHost struct {
	mu      sync.Mutex
	servers map[string]*stdioServer // by command
	closed  bool
}

// stdioServer is one running (or starting) server.
type stdioServer struct {
	ready  chan struct{} // closed once started or failed (err)
	err    error
	cs     *sdk.ClientSession
	exited chan struct{} // closed when its process has exited
	stop   func()        // kills it and everything it started
	stderr *tail
	idle   *time.Timer // stops it after MCPIdleTimeout without a request
}

// MCP serves one request to the stdio server r.Command, starting it first
// if it is not running.
func (l *Sandbox) MCP(ctx context.Context, r contracts.MCPRequest) (contracts.MCPResponse, error) {
	if len(r.Command) == 0 || r.Command[0] == "" {
		return contracts.MCPResponse{}, fmt.Errorf("mcp: empty command: %w", contracts.ErrInvalid)
	}
	if r.Method != contracts.MCPListTools && r.Method != contracts.MCPCallTool {
		return contracts.MCPResponse{}, fmt.Errorf("mcp: method %.32q: want %s or %s: %w", r.Method, contracts.MCPListTools, contracts.MCPCallTool, contracts.ErrInvalid)
	}
	var params sdk.CallToolParams
	if r.Method == contracts.MCPCallTool {
		if err := json.Unmarshal(r.Params, &params); err != nil || params.Name == "" {
			return contracts.MCPResponse{}, fmt.Errorf("mcp: tools/call params: want {name, arguments, _meta}: %w", contracts.ErrInvalid)
		}
	}
	srv, err := l.mcp.server(ctx, l, r.Command)
	if err != nil {
		return contracts.MCPResponse{}, err
	}
	var out any
	switch r.Method {
	case contracts.MCPListTools:
		res := sdk.ListToolsResult{Tools: []*sdk.Tool{}}
		for t, err := range srv.cs.Tools(ctx, nil) {
			if err != nil {
				return contracts.MCPResponse{}, srv.failed("listing tools", err)
			}
			res.Tools = append(res.Tools, t)
		}
		out = &res
	case contracts.MCPCallTool:
		if params.Arguments == nil {
			params.Arguments = map[string]any{}
		}
		res, err := srv.cs.CallTool(ctx, &params)
		if err != nil {
			if ctx.Err() != nil {
				return contracts.MCPResponse{}, fmt.Errorf("mcp: %w", ctx.Err())
			}
			return contracts.MCPResponse{}, srv.failed("calling "+params.Name, err)
		}
		out = res
	}
	b, err := json.Marshal(out)
	if err != nil {
		return contracts.MCPResponse{}, fmt.Errorf("mcp: encoding the result: %w", err)
	}
	init := srv.cs.InitializeResult()
	mayChange := init != nil && init.Capabilities != nil && init.Capabilities.Tools != nil && init.Capabilities.Tools.ListChanged
	return contracts.MCPResponse{Result: b, ToolsMayChange: mayChange}, nil
}

// CloseMCP stops the sandbox's stdio servers; a later request starts them
// again.
func (l *Sandbox) CloseMCP() { l.mcp.close(false) }

// failed is err of a request to the server, with its stderr's tail when
// it has exited. Anything but the server's own JSON-RPC error answer means
// the connection broke: the server is stopped (if it has not exited) and
// the next request starts it again.
func (s *stdioServer) failed(what string, err error) error {
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		s.stop()
	}
	select {
	case <-s.exited:
		return fmt.Errorf("mcp: %s: the server exited (%v); its stderr ends: %q: %w", what, err, s.stderr.String(), contracts.ErrUnavailable)
	default:
		return fmt.Errorf("mcp: %s: %w", what, err)
	}
}

// server returns the running server for command, starting it if there is
// none (or it exited). Concurrent requests share one start.
func (h *mcpHost) server(ctx context.Context, l *Sandbox, command []string) (*stdioServer, error) {
	key := strings.Join(command, "\x00")
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, fmt.Errorf("mcp: the sandbox is closed: %w", contracts.ErrUnavailable)
	}
	s := h.servers[key]
	if s != nil {
		select {
		case <-s.ready:
			if s.err != nil || isClosed(s.exited) {
				s = nil // start again
			}
		default:
		}
	}
	if s == nil {
		s = &stdioServer{ready: make(chan struct{}), exited: make(chan struct{}), stderr: &tail{max: stderrTail}}
		if h.servers == nil {
			h.servers = map[string]*stdioServer{}
		}
		h.servers[key] = s
		go func() {
			s.err = l.startMCP(s, command)
			close(s.ready)
		}()
	}
	h.mu.Unlock()
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, fmt.Errorf("mcp: starting %s: %w", command[0], ctx.Err())
	}
	if s.err != nil {
		return nil, s.err
	}
	h.mu.Lock()
	if s.idle == nil {
		s.idle = time.AfterFunc(MCPIdleTimeout, func() { h.evict(key, s) })
	} else {
		s.idle.Reset(MCPIdleTimeout)
	}
	h.mu.Unlock()
	return s, nil
}

// evict stops s, idle, unless a newer server replaced it.
func (h *mcpHost) evict(key string, s *stdioServer) {
	h.mu.Lock()
	if h.servers[key] == s {
		delete(h.servers, key)
	}
	h.mu.Unlock()
	s.stop()
}

// close stops every server (and, when final, refuses new ones).
func (h *mcpHost) close(final bool) {
	h.mu.Lock()
	servers := h.servers
	h.servers = nil
	h.closed = h.closed || final
	h.mu.Unlock()
	for _, s := range servers {
		<-s.ready
		if s.err == nil {
			h.mu.Lock()
			if s.idle != nil {
				s.idle.Stop()
			}
			h.mu.Unlock()
			s.stop()
		}
	}
}

// startMCP starts command as s and connects to it.
func (l *Sandbox) startMCP(s *stdioServer, command []string) error {
	argv := command
	if c := l.opts.Credential; c != nil { // resolved as the commands' user would
		argv = append([]string{lookPathAs(argv[0], l.env, c)}, argv[1:]...)
	}
	hg := groups()
	var g *callGroup
	if l.contain == ContainCgroup2 {
		g = hg.newCallGroup(l.opts.Limits, l.opts.Credential)
	}
	reaped := g == nil && l.contain == ContainSubreaper
	start := func(g *callGroup) (*execParts, error) {
		cmd := l.command(argv, l.root, hg, g, reaped)
		if !reaped {
			cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // the reaper sets its own
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		cmd.Stderr = s.stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return &execParts{cmd: cmd, stdin: stdin, stdout: stdout}, nil
	}
	p, err := start(g)
	if err != nil && g != nil { // the host refused the clone into the cgroup
		g.kill()
		g = nil
		p, err = start(nil)
	}
	if err != nil {
		g.kill()
		return fmt.Errorf("mcp: starting %s: %v: %w", command[0], err, contracts.ErrUnavailable)
	}
	pgid := p.cmd.Process.Pid
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			if s.cs != nil {
				s.cs.Close()
			}
			if reaped {
				_ = syscall.Kill(pgid, syscall.SIGTERM) // the reaper kills what it adopted
			} else {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			<-s.exited
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			g.kill()
		})
	}
	go func() {
		_ = p.cmd.Wait()
		close(s.exited)
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // what it left in its group goes with it
	}()
	ctx, cancel := context.WithTimeout(context.Background(), MCPStartTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {}, // as shared/mcp's client declares
	})
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		s.stop()
		return fmt.Errorf("mcp: %s did not answer initialize: %v; its stderr ends: %q: %w", command[0], err, s.stderr.String(), contracts.ErrUnavailable)
	}
	s.cs = cs
	return nil
}

type execParts struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
