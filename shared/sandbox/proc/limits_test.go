package proc

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// The spec's limits reach the sandboxd the provider starts
// (SANDBOXD_LIMITS): a busy loop under cpu_seconds 1 ends with the
// limit's marker.
func TestSpecLimitsReachSandboxd(t *testing.T) {
	w := newWorld(t, "ses_a")
	p := w.provider()
	sb := acquire(t, p, "ses_a", contracts.SandboxSpec{Limits: contracts.SandboxLimits{CPUSeconds: 1}})
	res, err := sb.Exec(t.Context(), contracts.ExecRequest{Command: "while :; do :; done", Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if marker := "[cpu_seconds limit (1 s) reached]"; res.ExitCode == 0 || res.TimedOut || !strings.HasSuffix(res.Stderr, marker) {
		t.Errorf("got %+v, want a failure ending its stderr with %q", res, marker)
	}
}
