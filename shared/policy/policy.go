package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Validate reports the first malformed element of p (wrapping
// contracts.ErrInvalid), so a bad policy is refused when the session is
// created rather than discovered mid-turn.
func Validate(p contracts.Policy) error {
	if !valid(p.Default, true) {
		return fmt.Errorf("policy default %q is not allow, ask or deny: %w", p.Default, contracts.ErrInvalid)
	}
	for name, d := range p.Tools {
		if !valid(d, false) {
			return fmt.Errorf("policy for tool %q: %q is not allow, ask or deny: %w", name, d, contracts.ErrInvalid)
		}
		if strings.Contains(name, "*") {
			if _, err := path.Match(globEscape(name), ""); err != nil {
				return fmt.Errorf("policy tool pattern %q: %v: %w", name, err, contracts.ErrInvalid)
			}
		}
	}
	for i, r := range p.Bash {
		if r.Pattern == "" || !valid(r.Decision, false) {
			return fmt.Errorf("policy bash rule %d: needs a pattern and allow, ask or deny: %w", i, contracts.ErrInvalid)
		}
		if _, err := path.Match(globEscape(r.Pattern), ""); err != nil {
			return fmt.Errorf("policy bash rule %d pattern %q: %v: %w", i, r.Pattern, err, contracts.ErrInvalid)
		}
	}
	if p.ApprovalTimeoutSeconds < 0 {
		return fmt.Errorf("policy approval_timeout_seconds is negative: %w", contracts.ErrInvalid)
	}
	return nil
}

func valid(d contracts.Decision, emptyOK bool) bool {
	switch d {
	case contracts.Allow, contracts.Ask, contracts.Deny:
		return true
	case "":
		return emptyOK
	}
	return false
}

// Decide returns the decision for call and a short reason naming the rule.
func Decide(p contracts.Policy, call contracts.ToolCall) (contracts.Decision, string) {
	if err := Validate(p); err != nil {
		return contracts.Deny, "policy error: " + err.Error()
	}
	if call.Name == "bash" && len(p.Bash) > 0 {
		var in struct {
			Command string `json:"command"`
		}
		if err := json.Unmarshal(call.Input, &in); err != nil || strings.TrimSpace(in.Command) == "" {
			return contracts.Deny, "policy error: bash call without a command"
		}
		for _, r := range p.Bash {
			if matchCommand(r.Pattern, strings.TrimSpace(in.Command)) {
				return r.Decision, "bash rule " + r.Pattern
			}
		}
	}
	if d, ok := p.Tools[call.Name]; ok {
		return d, "tool rule " + call.Name
	}
	if pat, d, ok := toolPattern(p.Tools, call.Name); ok {
		return d, "tool rule " + pat
	}
	if p.Default == "" {
		return contracts.Allow, "default"
	}
	return p.Default, "default"
}

// toolPattern finds the tool rule whose key is a pattern (with `*`, any
// run of characters) matching name — "mcp__docs__*" for every tool of the
// MCP server docs. The longest matching pattern wins (the most specific),
// then the first in byte order; an exact key has already been tried.
func toolPattern(tools map[string]contracts.Decision, name string) (string, contracts.Decision, bool) {
	best, found := "", false
	for pat := range tools {
		if !strings.Contains(pat, "*") || !matchCommand(pat, name) {
			continue
		}
		if !found || len(pat) > len(best) || (len(pat) == len(best) && pat < best) {
			best, found = pat, true
		}
	}
	return best, tools[best], found
}

// matchCommand matches a whole command line against a pattern where `*`
// matches any run of characters (slashes and spaces included).
func matchCommand(pattern, cmd string) bool {
	ok, err := path.Match(globEscape(pattern), strings.ReplaceAll(cmd, "/", "\x00"))
	return err == nil && ok
}

// globEscape lets `*` cross "/" by mapping "/" to NUL on both sides.
func globEscape(p string) string { return strings.ReplaceAll(p, "/", "\x00") }
