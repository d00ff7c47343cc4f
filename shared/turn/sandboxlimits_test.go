package turn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/turn"
)

// CheckSpec bounds every sandbox limit and names the field it refuses.
func TestCheckSpecSandboxLimits(t *testing.T) {
	ok := contracts.SessionSpec{Sandbox: contracts.SandboxSpec{Limits: contracts.SandboxLimits{MemoryMiB: 512, Pids: 64, FileSizeMiB: 100, WorkspaceMiB: 1024, CPUSeconds: 60}}}
	if err := turn.CheckSpec(ok); err != nil {
		t.Fatalf("limits within bounds: %v", err)
	}
	for field, set := range map[string]func(*contracts.SandboxLimits){
		"sandbox.limits.memory_mib":    func(l *contracts.SandboxLimits) { l.MemoryMiB = turn.MaxSandboxMemoryMiB + 1 },
		"sandbox.limits.pids":          func(l *contracts.SandboxLimits) { l.Pids = -1 },
		"sandbox.limits.file_size_mib": func(l *contracts.SandboxLimits) { l.FileSizeMiB = turn.MaxSandboxFileSizeMiB + 1 },
		"sandbox.limits.workspace_mib": func(l *contracts.SandboxLimits) { l.WorkspaceMiB = turn.MaxSandboxWorkspaceMiB + 1 },
		"sandbox.limits.cpu_seconds":   func(l *contracts.SandboxLimits) { l.CPUSeconds = turn.MaxSandboxCPUSeconds + 1 },
	} {
		spec := ok
		set(&spec.Sandbox.Limits)
		err := turn.CheckSpec(spec)
		if !errors.Is(err, contracts.ErrInvalid) || !strings.HasPrefix(err.Error(), field+" is ") {
			t.Errorf("%s out of bounds: %v, want ErrInvalid naming it", field, err)
		}
	}
}

// CheckSpec takes only the known network and workspace values.
func TestCheckSpecSandboxOptions(t *testing.T) {
	for _, s := range []contracts.SandboxSpec{{}, {Network: "none"}, {Network: "internet"}, {Workspace: "ephemeral"}} {
		if err := turn.CheckSpec(contracts.SessionSpec{Sandbox: s}); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	for field, s := range map[string]contracts.SandboxSpec{
		"sandbox.network":   {Network: "vpn"},
		"sandbox.workspace": {Workspace: "durable"},
	} {
		err := turn.CheckSpec(contracts.SessionSpec{Sandbox: s})
		if !errors.Is(err, contracts.ErrInvalid) || !strings.HasPrefix(err.Error(), field+" is ") {
			t.Errorf("%+v: %v, want ErrInvalid naming %s", s, err, field)
		}
	}
}
