package policy

import (
	"encoding/json"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

func bash(cmd string) contracts.ToolCall {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return contracts.ToolCall{ID: "c1", Name: "bash", Input: in}
}

func TestDecide(t *testing.T) {
	p := contracts.Policy{
		Default: contracts.Ask,
		Tools:   map[string]contracts.Decision{"read_file": contracts.Allow, "python": contracts.Deny},
		Bash: []contracts.CommandRule{
			{Pattern: "rm *", Decision: contracts.Deny},
			{Pattern: "ls*", Decision: contracts.Allow},
			{Pattern: "cat /etc/*", Decision: contracts.Deny},
		},
	}
	cases := []struct {
		name string
		pol  contracts.Policy
		call contracts.ToolCall
		want contracts.Decision
	}{
		{"tool allow", p, contracts.ToolCall{Name: "read_file"}, contracts.Allow},
		{"tool deny", p, contracts.ToolCall{Name: "python"}, contracts.Deny},
		{"default ask", p, contracts.ToolCall{Name: "write_file"}, contracts.Ask},
		{"bash rule deny", p, bash("rm -rf /"), contracts.Deny},
		{"bash rule allow", p, bash("ls -la"), contracts.Allow},
		{"bash star crosses slash", p, bash("cat /etc/passwd"), contracts.Deny},
		{"bash unmatched falls to default", p, bash("echo hi"), contracts.Ask},
		{"bash without command fails closed", p, contracts.ToolCall{Name: "bash", Input: json.RawMessage(`{}`)}, contracts.Deny},
		{"bash malformed input fails closed", p, contracts.ToolCall{Name: "bash", Input: json.RawMessage(`{`)}, contracts.Deny},
		{"empty policy allows", contracts.Policy{}, bash("anything"), contracts.Allow},
		{"unknown decision word fails closed", contracts.Policy{Default: "maybe"}, contracts.ToolCall{Name: "glob"}, contracts.Deny},
		{"bad tool decision fails closed", contracts.Policy{Tools: map[string]contracts.Decision{"glob": "yes"}}, contracts.ToolCall{Name: "glob"}, contracts.Deny},
		{"bad pattern fails closed", contracts.Policy{Bash: []contracts.CommandRule{{Pattern: "[", Decision: contracts.Allow}}}, bash("ls"), contracts.Deny},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := Decide(c.pol, c.call)
			if got != c.want {
				t.Fatalf("Decide = %s (%s), want %s", got, why, c.want)
			}
		})
	}
}

func TestToolPatterns(t *testing.T) {
	p := contracts.Policy{Default: contracts.Ask, Tools: map[string]contracts.Decision{
		"mcp__docs__*":         contracts.Allow,
		"mcp__docs__delete*":   contracts.Deny,
		"mcp__docs__delete_me": contracts.Ask,
		"mcp__*":               contracts.Deny,
	}}
	for name, want := range map[string]contracts.Decision{
		"mcp__docs__search":    contracts.Allow, // the server's pattern
		"mcp__docs__delete_x":  contracts.Deny,  // the longer pattern wins
		"mcp__docs__delete_me": contracts.Ask,   // an exact name wins
		"mcp__fs__read":        contracts.Deny,  // every other MCP tool
		"read_file":            contracts.Ask,   // the default
	} {
		if got, why := Decide(p, contracts.ToolCall{Name: name}); got != want {
			t.Errorf("Decide(%s) = %s (%s), want %s", name, got, why, want)
		}
	}
}
