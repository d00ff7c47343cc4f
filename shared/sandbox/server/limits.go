package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cairnrun/cairn/shared/contracts"
)

// EnvLimits names the variable holding the per-call limits of commands:
// contracts.SandboxLimits as JSON, such as {"cpu_seconds":60,"memory_mib":512}
// (the process and fargate providers set it from spec.sandbox.limits).
// Unset or empty, commands run without limits.
const EnvLimits = "SANDBOXD_LIMITS"

// Bounds of each limit: those turn.CheckSpec applies when a session is
// created (a test keeps them equal). sandboxd re-checks them because it
// may be started by hand, and the server cannot import shared/turn.
const (
	maxMemoryMiB    = 122880
	maxPids         = 1 << 20
	maxFileSizeMiB  = 1 << 20
	maxWorkspaceMiB = 1 << 24
	maxCPUSeconds   = 30 * 24 * 3600
)

// parseLimits returns the limits named by the value of EnvLimits. Bad
// JSON, an unknown field, trailing data or a number out of its bounds is
// ErrInvalid, naming the field.
func parseLimits(value string) (contracts.SandboxLimits, error) {
	var l contracts.SandboxLimits
	if value == "" {
		return l, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return contracts.SandboxLimits{}, fmt.Errorf("%s: want a JSON object of memory_mib, pids, file_size_mib, workspace_mib, cpu_seconds: %v: %w", EnvLimits, err, contracts.ErrInvalid)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return contracts.SandboxLimits{}, fmt.Errorf("%s: trailing data after the JSON object: %w", EnvLimits, contracts.ErrInvalid)
	}
	for _, n := range []struct {
		name   string
		v, max int
	}{
		{"memory_mib", l.MemoryMiB, maxMemoryMiB},
		{"pids", l.Pids, maxPids},
		{"file_size_mib", l.FileSizeMiB, maxFileSizeMiB},
		{"workspace_mib", l.WorkspaceMiB, maxWorkspaceMiB},
		{"cpu_seconds", l.CPUSeconds, maxCPUSeconds},
	} {
		if n.v < 0 || n.v > n.max {
			return contracts.SandboxLimits{}, fmt.Errorf("%s: %s is %d: want 0 (no limit) to %d: %w", EnvLimits, n.name, n.v, n.max, contracts.ErrInvalid)
		}
	}
	return l, nil
}
