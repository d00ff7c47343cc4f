package turn

import (
	"context"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
)

// CreateSession stores a new session for owner with spec (validated by
// the caller: policy, tools, model), its MCP servers' tools listed and
// pinned in it (ErrUnavailable naming a server that cannot be reached).
func (e *Engine) CreateSession(ctx context.Context, owner string, spec contracts.SessionSpec) (contracts.Session, error) {
	pin, err := e.pinMCP(ctx, spec.MCP) // listed once, here: every phase binds the same tools
	if err != nil {
		return contracts.Session{}, fmt.Errorf("creating session: %w", err)
	}
	now := e.now()
	sess, err := e.Journal.CreateSession(ctx, contracts.Session{ID: e.IDs.New("ses"), Owner: owner, Spec: spec, MCP: pin, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return sess, fmt.Errorf("creating session: %w", err)
	}
	return sess, nil
}

// CheckSandbox reports whether a sandbox spec can be served here: the
// provider's own Check when it has one, else only the local kind.
func (e *Engine) CheckSandbox(spec contracts.SandboxSpec) error {
	if c, ok := e.Sandboxes.(contracts.SandboxChecker); ok {
		return c.Check(spec)
	}
	if spec.Kind != "" && spec.Kind != "local" {
		return fmt.Errorf("sandbox kind %q is not served by this deployment (it serves \"local\"): %w", spec.Kind, contracts.ErrInvalid)
	}
	return nil
}

// CheckModel reports whether a model string resolves here.
func (e *Engine) CheckModel(model string) error {
	c, name, err := e.Models(model)
	if err != nil {
		return err
	}
	if v, ok := c.(contracts.ModelChecker); ok {
		return v.CheckModel(name)
	}
	return nil
}

// Bounds of a session spec, checked by CheckSpec when the session is
// created: every number becomes a count or a time.Duration somewhere, so
// each must fit one with room to spare (a max_wall_seconds of 1e10 would
// overflow time.Duration and trip every turn at step 0).
const (
	MaxLimitSteps          = 10_000
	MaxLimitTokens         = 1_000_000_000
	MaxLimitWallSeconds    = 30 * 24 * 3600 // 30 days
	MaxApprovalTimeoutSecs = 30 * 24 * 3600 // 30 days
	MaxSandboxCPU          = 16384          // Fargate's largest task: 16 vCPU
	MaxSandboxMemoryMiB    = 122880         // and 120 GiB
	MaxSandboxPids         = 1 << 20
	MaxSandboxFileSizeMiB  = 1 << 20 // 1 TiB
	MaxSandboxWorkspaceMiB = 1 << 24 // 16 TiB
	MaxSandboxCPUSeconds   = 30 * 24 * 3600
	MaxSystemBytes         = MaxPromptBytes
	MaxModelBytes          = 256
	MaxSessionTools        = 64
	MaxToolConfigBytes     = 64 << 10
	MaxPolicyEntries       = 256 // tool decisions, and bash rules
	MaxPolicyPatternBytes  = 4096
)

// CheckSpec refuses a spec with a number out of its bounds (ErrInvalid) or
// a text over its size (ErrTooLarge), naming the field. It does not check
// names (model, tools, sandbox kind) against what is served: CheckModel,
// CheckSandbox and the registry do.
func CheckSpec(spec contracts.SessionSpec) error {
	for _, n := range []struct {
		name   string
		v, max int
		unit   string
	}{
		{"limits.max_steps", spec.Limits.MaxSteps, MaxLimitSteps, ""},
		{"limits.max_tokens", spec.Limits.MaxTokens, MaxLimitTokens, ""},
		{"limits.max_wall_seconds", spec.Limits.MaxWallSeconds, MaxLimitWallSeconds, " (30 days)"},
		{"policy.approval_timeout_seconds", spec.Policy.ApprovalTimeoutSeconds, MaxApprovalTimeoutSecs, " (30 days)"},
		{"sandbox.cpu", spec.Sandbox.CPU, MaxSandboxCPU, ""},
		{"sandbox.memory_mib", spec.Sandbox.MemoryMiB, MaxSandboxMemoryMiB, ""},
		{"sandbox.limits.memory_mib", spec.Sandbox.Limits.MemoryMiB, MaxSandboxMemoryMiB, ""},
		{"sandbox.limits.pids", spec.Sandbox.Limits.Pids, MaxSandboxPids, ""},
		{"sandbox.limits.file_size_mib", spec.Sandbox.Limits.FileSizeMiB, MaxSandboxFileSizeMiB, ""},
		{"sandbox.limits.workspace_mib", spec.Sandbox.Limits.WorkspaceMiB, MaxSandboxWorkspaceMiB, ""},
		{"sandbox.limits.cpu_seconds", spec.Sandbox.Limits.CPUSeconds, MaxSandboxCPUSeconds, " (30 days)"},
	} {
		if n.v < 0 || n.v > n.max {
			return fmt.Errorf("%s is %d: want 0 (the default) to %d%s: %w", n.name, n.v, n.max, n.unit, contracts.ErrInvalid)
		}
	}
	switch {
	case len(spec.System) > MaxSystemBytes:
		return fmt.Errorf("system is %d bytes, limit %d: %w", len(spec.System), MaxSystemBytes, contracts.ErrTooLarge)
	case len(spec.Model) > MaxModelBytes:
		return fmt.Errorf("model is %d bytes, limit %d: %w", len(spec.Model), MaxModelBytes, contracts.ErrInvalid)
	case len(spec.Tools) > MaxSessionTools:
		return fmt.Errorf("tools lists %d tools, limit %d: %w", len(spec.Tools), MaxSessionTools, contracts.ErrInvalid)
	case len(spec.Policy.Tools) > MaxPolicyEntries:
		return fmt.Errorf("policy.tools has %d entries, limit %d: %w", len(spec.Policy.Tools), MaxPolicyEntries, contracts.ErrInvalid)
	case len(spec.Policy.Bash) > MaxPolicyEntries:
		return fmt.Errorf("policy.bash has %d rules, limit %d: %w", len(spec.Policy.Bash), MaxPolicyEntries, contracts.ErrInvalid)
	case len(spec.Sandbox.Kind) > MaxModelBytes:
		return fmt.Errorf("sandbox.kind is %d bytes, limit %d: %w", len(spec.Sandbox.Kind), MaxModelBytes, contracts.ErrInvalid)
	case spec.Sandbox.Network != "" && spec.Sandbox.Network != contracts.NetworkNone && spec.Sandbox.Network != contracts.NetworkInternet:
		return fmt.Errorf("sandbox.network is %.64q: want %q (the default) or %q: %w", spec.Sandbox.Network, contracts.NetworkNone, contracts.NetworkInternet, contracts.ErrInvalid)
	case spec.Sandbox.Workspace != "" && spec.Sandbox.Workspace != contracts.WorkspaceEphemeral:
		return fmt.Errorf("sandbox.workspace is %.64q: want \"\" (the kind's default) or %q: %w", spec.Sandbox.Workspace, contracts.WorkspaceEphemeral, contracts.ErrInvalid)
	}
	if err := checkMCP(spec.MCP); err != nil {
		return err
	}
	for i, t := range spec.Tools {
		if len(t.Config) > MaxToolConfigBytes {
			return fmt.Errorf("tools[%d].config is %d bytes, limit %d: %w", i, len(t.Config), MaxToolConfigBytes, contracts.ErrTooLarge)
		}
	}
	for name := range spec.Policy.Tools {
		if len(name) > MaxModelBytes {
			return fmt.Errorf("policy.tools has a tool name of %d bytes, limit %d: %w", len(name), MaxModelBytes, contracts.ErrInvalid)
		}
	}
	for i, r := range spec.Policy.Bash {
		if len(r.Pattern) > MaxPolicyPatternBytes {
			return fmt.Errorf("policy.bash[%d].pattern is %d bytes, limit %d: %w", i, len(r.Pattern), MaxPolicyPatternBytes, contracts.ErrInvalid)
		}
	}
	return nil
}
