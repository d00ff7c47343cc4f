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
	"strings"

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
			return fmt.Errorf("%s (%s): stdio servers (command, in_sandbox) are not served by this version yet; use a remote server (url): %w", at, s.Name, contracts.ErrInvalid)
		case s.URL == "":
			return fmt.Errorf("%s (%s): url is required: %w", at, s.Name, contracts.ErrInvalid)
		case len(s.URL) > MaxMCPURLBytes:
			return fmt.Errorf("%s.url is %d bytes, limit %d: %w", at, len(s.URL), MaxMCPURLBytes, contracts.ErrInvalid)
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
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

// pinMCP lists the tools of the spec's MCP servers for a new session
// (Deps.MCP): every process then binds the same tools from the record. A
// server that cannot be reached fails the creation with ErrUnavailable,
// naming it.
func (e *Engine) pinMCP(ctx context.Context, servers []contracts.MCPServer) (*contracts.MCPPin, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	if e.MCP == nil {
		return nil, fmt.Errorf("mcp servers are not served by this deployment: %w", contracts.ErrInvalid)
	}
	pin := &contracts.MCPPin{ListedAt: e.now()}
	names := map[string]bool{}
	for _, s := range servers {
		ts, err := e.MCP.ListTools(ctx, s)
		if errors.Is(err, contracts.ErrInvalid) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("listing the tools of mcp server %s: %v: %w", s.Name, err, contracts.ErrUnavailable)
		}
		for _, t := range ts {
			if names[t.Name] {
				return nil, fmt.Errorf("mcp server %s: its tool %s is offered as %s, which another server's tool already is: %w", s.Name, t.Tool, t.Name, contracts.ErrInvalid)
			}
			names[t.Name] = true
		}
		pin.Tools = append(pin.Tools, ts...)
	}
	// Their pinned schemas must compile, or no phase could bind them.
	if _, err := e.Registry.Bind(nil, contracts.Binding{MCPServers: servers, MCPTools: pin.Tools}); err != nil {
		return nil, err
	}
	pin.Fingerprint = MCPFingerprint(pin.Tools)
	return pin, nil
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
