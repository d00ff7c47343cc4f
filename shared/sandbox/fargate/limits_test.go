package fargate_test

import (
	"encoding/json"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// The spec's limits go to sandboxd as a container environment override
// (SANDBOXD_LIMITS, which sandboxd applies to every command); a spec
// without limits sets no such variable.
func TestRunTaskPassesLimits(t *testing.T) {
	h := newHarness(t, "ses_a", "ses_b")
	p, c := h.provider()
	lim := contracts.SandboxLimits{MemoryMiB: 512, Pids: 64, FileSizeMiB: 100, WorkspaceMiB: 2048, CPUSeconds: 60}
	acquire(t, p, "ses_a", contracts.SandboxSpec{Limits: lim})
	v := envValue(c.lastRun(), placement.EnvLimits)
	var got contracts.SandboxLimits
	if err := json.Unmarshal([]byte(v), &got); err != nil || got != lim {
		t.Errorf("%s override %q (%+v, %v), want %+v", placement.EnvLimits, v, got, err, lim)
	}

	acquire(t, p, "ses_b", contracts.SandboxSpec{})
	for _, kv := range c.lastRun().Overrides.ContainerOverrides[0].Environment {
		if *kv.Name == placement.EnvLimits {
			t.Errorf("a spec without limits sent %s=%q", placement.EnvLimits, *kv.Value)
		}
	}
}
