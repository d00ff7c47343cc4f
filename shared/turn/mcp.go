package turn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Bounds of a session's MCP servers (CheckSpec).
const (
	MaxMCPServers     = 16
	MaxMCPHeaders     = 32
	MaxMCPURLBytes    = 2048
	MaxMCPNameEntries = 256 // tools and read_only, each
)

var mcpServerName = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// secretRef reports whether v is a secret reference of shared/secrets.
func secretRef(v string) bool {
	for _, p := range []string{"env:", "secretsmanager:", "arn:aws:secretsmanager:"} {
		if strings.HasPrefix(v, p) && len(v) > len(p) {
			return true
		}
	}
	return false
}

// checkMCP refuses MCP server entries that cannot be served, naming the
// entry and field.
func checkMCP(servers []contracts.MCPServer) error {
	if len(servers) > MaxMCPServers {
		return fmt.Errorf("mcp lists %d servers, limit %d: %w", len(servers), MaxMCPServers, contracts.ErrInvalid)
	}
	seen := map[string]bool{}
	for i, s := range servers {
		at := fmt.Sprintf("mcp[%d]", i)
		if !mcpServerName.MatchString(s.Name) {
			return fmt.Errorf("%s.name %.64q: want 1-32 of a-z, 0-9, _ and -: %w", at, s.Name, contracts.ErrInvalid)
		}
		if seen[s.Name] {
			return fmt.Errorf("%s.name %q: two servers have that name: %w", at, s.Name, contracts.ErrInvalid)
		}
		seen[s.Name] = true
		switch {
		case len(s.Command) > 0 && s.URL != "":
			return fmt.Errorf("%s (%s): url and command both set: a server is remote or stdio: %w", at, s.Name, contracts.ErrInvalid)
		case len(s.Command) > 0 && !s.InSandbox:
			return fmt.Errorf("%s (%s): a stdio server runs inside the session's sandbox only: set in_sandbox: %w", at, s.Name, contracts.ErrInvalid)
		case len(s.Command) > 0:
			if err := checkCommand(at, s); err != nil {
				return err
			}
		case s.URL == "":
			return fmt.Errorf("%s (%s): url is required: %w", at, s.Name, contracts.ErrInvalid)
		case len(s.URL) > MaxMCPURLBytes:
			return fmt.Errorf("%s.url is %d bytes, limit %d: %w", at, len(s.URL), MaxMCPURLBytes, contracts.ErrInvalid)
		}
		if len(s.Command) > 0 {
			if s.Transport != "" || len(s.Headers) > 0 {
				return fmt.Errorf("%s (%s): transport and headers are a remote server's; a stdio server has neither: %w", at, s.Name, contracts.ErrInvalid)
			}
		} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fmt.Errorf("%s.url %.128q: want an http or https URL without credentials (put them in headers as secret references): %w", at, s.URL, contracts.ErrInvalid)
		}
		if s.Transport != "" && s.Transport != contracts.MCPStreamable && s.Transport != contracts.MCPSSE {
			return fmt.Errorf("%s.transport %.32q: want %q (the default) or %q: %w", at, s.Transport, contracts.MCPStreamable, contracts.MCPSSE, contracts.ErrInvalid)
		}
		if len(s.Headers) > MaxMCPHeaders {
			return fmt.Errorf("%s.headers has %d entries, limit %d: %w", at, len(s.Headers), MaxMCPHeaders, contracts.ErrInvalid)
		}
		for k, v := range s.Headers {
			if k == "" || len(k) > 256 || strings.ContainsAny(k, " \t\r\n:") {
				return fmt.Errorf("%s.headers: %.64q is not a header name: %w", at, k, contracts.ErrInvalid)
			}
			if !secretRef(v) || len(v) > MaxMCPURLBytes {
				// The value is not echoed: it may be the secret itself.
				return fmt.Errorf("%s.headers.%s: want a secret reference (env:NAME, secretsmanager:ID or a Secrets Manager ARN), not a value: %w", at, k, contracts.ErrInvalid)
			}
		}
		for _, list := range []struct {
			field string
			names []string
		}{{"tools", s.Tools}, {"read_only", s.ReadOnly}} {
			if len(list.names) > MaxMCPNameEntries {
				return fmt.Errorf("%s.%s has %d entries, limit %d: %w", at, list.field, len(list.names), MaxMCPNameEntries, contracts.ErrInvalid)
			}
			for _, n := range list.names {
				if n == "" || len(n) > MaxModelBytes {
					return fmt.Errorf("%s.%s: a tool name of %d bytes: want 1 to %d: %w", at, list.field, len(n), MaxModelBytes, contracts.ErrInvalid)
				}
			}
		}
	}
	return nil
}

// Bounds of a stdio server's command.
const (
	MaxMCPCommandArgs  = 64
	MaxMCPCommandBytes = 16 << 10
)

// checkCommand refuses a stdio server's command that no sandbox could run.
func checkCommand(at string, s contracts.MCPServer) error {
	if len(s.Command) > MaxMCPCommandArgs {
		return fmt.Errorf("%s.command has %d arguments, limit %d: %w", at, len(s.Command), MaxMCPCommandArgs, contracts.ErrInvalid)
	}
	total := 0
	for i, a := range s.Command {
		total += len(a)
		if strings.ContainsRune(a, 0) || !utf8.ValidString(a) {
			return fmt.Errorf("%s.command[%d]: not valid UTF-8 without NUL: %w", at, i, contracts.ErrInvalid)
		}
	}
	if strings.TrimSpace(s.Command[0]) == "" {
		return fmt.Errorf("%s.command[0]: the program is empty: %w", at, contracts.ErrInvalid)
	}
	if total > MaxMCPCommandBytes {
		return fmt.Errorf("%s.command is %d bytes, limit %d: %w", at, total, MaxMCPCommandBytes, contracts.ErrInvalid)
	}
	return nil
}

// pinMCP lists the tools of the spec's remote MCP servers for a new
// session (Deps.MCP): every process then binds the same tools from the
// record. A server that cannot be reached fails the creation with
// ErrUnavailable, naming it. Stdio servers run in the session's sandbox,
// which does not exist yet: the first model phase lists them
// (pinInSandbox).
func (e *Engine) pinMCP(ctx context.Context, servers []contracts.MCPServer) (*contracts.MCPPin, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	if e.MCP == nil {
		return nil, fmt.Errorf("mcp servers are not served by this deployment: %w", contracts.ErrInvalid)
	}
	pin := &contracts.MCPPin{ListedAt: e.now()}
	for _, s := range servers {
		if len(s.Command) > 0 {
			continue
		}
		ts, err := e.MCP.ListTools(ctx, s, nil)
		if errors.Is(err, contracts.ErrInvalid) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("listing the tools of mcp server %s: %v: %w", s.Name, err, contracts.ErrUnavailable)
		}
		if err := pinAdd(pin, s.Name, ts); err != nil {
			return nil, err
		}
	}
	if err := e.pinCheck(servers, pin); err != nil {
		return nil, err
	}
	return pin, nil
}

// pinAdd adds server's listed tools to pin, refusing a name another
// server's tool is already offered as.
func pinAdd(pin *contracts.MCPPin, server string, ts []contracts.MCPTool) error {
	names := map[string]bool{}
	for _, t := range pin.Tools {
		names[t.Name] = true
	}
	for _, t := range ts {
		if names[t.Name] {
			return fmt.Errorf("mcp server %s: its tool %s is offered as %s, which another server's tool already is: %w", server, t.Tool, t.Name, contracts.ErrInvalid)
		}
		names[t.Name] = true
	}
	pin.Servers = append(pin.Servers, server)
	pin.Tools = append(pin.Tools, ts...)
	return nil
}

// pinCheck checks that pin's schemas compile (or no phase could bind
// them) and sets its fingerprint.
func (e *Engine) pinCheck(servers []contracts.MCPServer, pin *contracts.MCPPin) error {
	if _, err := e.Registry.Bind(nil, contracts.Binding{MCPServers: servers, MCPTools: pin.Tools}); err != nil {
		return err
	}
	pin.Fingerprint = MCPFingerprint(pin.Tools)
	return nil
}

// unlisted are the session's stdio servers its pin has not listed yet.
func unlisted(sess contracts.Session) []contracts.MCPServer {
	var out []contracts.MCPServer
	for _, s := range sess.Spec.MCP {
		if len(s.Command) > 0 && (sess.MCP == nil || !slices.Contains(sess.MCP.Servers, s.Name)) {
			out = append(out, s)
		}
	}
	return out
}

// pinForModel handles the message a model phase hands to the tools queue
// when its session's stdio servers are not listed yet: list them in the
// session's sandbox (pinInSandbox), then send the model phase again. A
// server that cannot be listed ends the turn FAILED naming it (a spec
// problem, or a server that does not start: a retry of the turn tries
// again); a sandbox that cannot be placed is retried as any phase is.
func (e *Engine) pinForModel(ctx context.Context, m contracts.Message) error {
	sub, ok, err := e.load(ctx, m, contracts.PhaseModel)
	if !ok || err != nil {
		return err
	}
	sess, err := e.sessionSpec(ctx, sub.SessionID)
	if err != nil {
		return err
	}
	if _, busy := e.pinning.LoadOrStore(sess.ID, true); busy {
		return fmt.Errorf("the MCP servers of session %s are being listed by another worker of this process: %w", sess.ID, contracts.ErrUnavailable)
	}
	defer e.pinning.Delete(sess.ID)
	if _, err := e.pinInSandbox(ctx, sess); err != nil {
		var place *placeError
		if errors.As(err, &place) || ctx.Err() != nil {
			return err
		}
		return e.Fail(ctx, sub, "mcp_tools: "+err.Error())
	}
	return e.Enqueue(ctx, contracts.QueueModel, sub, "mcp-pinned")
}

// placeError is a sandbox that could not be placed: retried, not a
// failure of the turn.
type placeError struct{ err error }

func (p *placeError) Error() string { return p.err.Error() }
func (p *placeError) Unwrap() error { return p.err }

// pinInSandbox lists, before the session's first model call, the tools of
// its stdio servers — started in its sandbox — and adds them to its pin
// with a conditional write: a process that lost the race uses the winner's
// pin, so every phase everywhere offers the same tools. Done once per
// session.
func (e *Engine) pinInSandbox(ctx context.Context, sess contracts.Session) (contracts.Session, error) {
	missing := unlisted(sess)
	if len(missing) == 0 {
		return sess, nil
	}
	if e.MCP == nil {
		return sess, fmt.Errorf("mcp servers are not served by this deployment: %w", contracts.ErrInvalid)
	}
	sb, err := e.Sandboxes.Acquire(ctx, sess.ID, sess.Spec.Sandbox)
	if errors.Is(err, contracts.ErrInvalid) {
		return sess, fmt.Errorf("acquiring the sandbox of session %s for its MCP servers: %w", sess.ID, err)
	}
	if err != nil {
		return sess, &placeError{fmt.Errorf("acquiring the sandbox of session %s for its MCP servers: %w", sess.ID, err)}
	}
	host, ok := sb.(contracts.MCPHost)
	if !ok {
		return sess, fmt.Errorf("the %q sandbox of session %s runs no stdio MCP servers: %w", sess.Spec.Sandbox.Kind, sess.ID, contracts.ErrInvalid)
	}
	listed := map[string][]contracts.MCPTool{}
	for _, s := range missing {
		ts, err := e.MCP.ListTools(ctx, s, host)
		if err != nil {
			return sess, fmt.Errorf("listing the tools of mcp server %s in the sandbox: %w", s.Name, err)
		}
		listed[s.Name] = ts
	}
	for range 8 {
		full, err := e.Journal.GetSession(ctx, sess.ID)
		if err != nil {
			return sess, fmt.Errorf("reading session %s: %w", sess.ID, err)
		}
		if len(unlisted(full)) == 0 { // another process pinned them first
			return full, nil
		}
		pin := &contracts.MCPPin{ListedAt: e.now()}
		if full.MCP != nil {
			pin.Servers = slices.Clone(full.MCP.Servers)
			pin.Tools = slices.Clone(full.MCP.Tools)
		}
		for _, s := range unlisted(full) {
			if err := pinAdd(pin, s.Name, listed[s.Name]); err != nil {
				return sess, err
			}
		}
		if err := e.pinCheck(full.Spec.MCP, pin); err != nil {
			return sess, err
		}
		upd := full
		upd.MCP = pin
		saved, err := e.Journal.UpdateSession(ctx, upd, full.Version)
		if errors.Is(err, contracts.ErrConflict) {
			continue
		}
		if err != nil {
			return sess, fmt.Errorf("pinning the MCP tools of session %s: %w", sess.ID, err)
		}
		return saved, nil
	}
	return sess, fmt.Errorf("pinning the MCP tools of session %s: the session kept changing: %w", sess.ID, contracts.ErrConflict)
}

// MCPFingerprint is the SHA-256 of tools as a session pins them.
func MCPFingerprint(tools []contracts.MCPTool) string {
	b, _ := json.Marshal(tools) // plain data: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// binding is b with the session's MCP servers and pinned tools.
func (e *Engine) binding(sess contracts.Session, b contracts.Binding) contracts.Binding {
	b.MCPServers = sess.Spec.MCP
	if sess.MCP != nil {
		b.MCPTools = sess.MCP.Tools
	}
	return b
}
