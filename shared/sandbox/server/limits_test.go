package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/turn"
)

// SANDBOXD_LIMITS reaches every command: a busy loop under cpu_seconds 1
// ends with the limit's marker.
func TestLimitsApplied(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	environ := []string{"PATH=" + os.Getenv("PATH"), "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken), `SANDBOXD_LIMITS={"cpu_seconds":1}`}
	url, code := runMain(t, ctx, []string{"--addr", "127.0.0.1:0", "--workspace", reachableDir(t), "--state", filepath.Join(t.TempDir(), "state")}, environ)
	c := client(t, url)
	res, err := c.Exec(t.Context(), contracts.ExecRequest{Command: "while :; do :; done", Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if marker := "[cpu_seconds limit (1 s) reached]"; res.ExitCode == 0 || res.TimedOut || !strings.HasSuffix(res.Stderr, marker) {
		t.Errorf("got %+v, want a failure ending its stderr with %q", res, marker)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit %d after ctx end, want 0", got)
	}
}

// Each limit at turn.CheckSpec's bound is accepted: sandboxd's bounds are
// the spec's (one more is refused, TestLimitsRefused).
func TestLimitsAtTheirBounds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lim := fmt.Sprintf(`SANDBOXD_LIMITS={"memory_mib":%d,"pids":%d,"file_size_mib":%d,"workspace_mib":%d,"cpu_seconds":%d}`,
		turn.MaxSandboxMemoryMiB, turn.MaxSandboxPids, turn.MaxSandboxFileSizeMiB, turn.MaxSandboxWorkspaceMiB, turn.MaxSandboxCPUSeconds)
	environ := []string{"PATH=" + os.Getenv("PATH"), "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken), lim}
	url, code := runMain(t, ctx, []string{"--addr", "127.0.0.1:0", "--workspace", reachableDir(t), "--state", filepath.Join(t.TempDir(), "state")}, environ)
	if err := client(t, url).Health(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit %d after ctx end, want 0", got)
	}
}

// A bad SANDBOXD_LIMITS refuses to start (exit 2), naming the variable.
func TestLimitsRefused(t *testing.T) {
	for _, v := range []string{
		`{`, `[]`, `{"cpu_seconds":"1"}`, `{"cpu":1}`, `{"cpu_seconds":1} {}`, `{"cpu_seconds":-1}`,
		fmt.Sprintf(`{"memory_mib":%d}`, turn.MaxSandboxMemoryMiB+1),
		fmt.Sprintf(`{"pids":%d}`, turn.MaxSandboxPids+1),
		fmt.Sprintf(`{"file_size_mib":%d}`, turn.MaxSandboxFileSizeMiB+1),
		fmt.Sprintf(`{"workspace_mib":%d}`, turn.MaxSandboxWorkspaceMiB+1),
		fmt.Sprintf(`{"cpu_seconds":%d}`, turn.MaxSandboxCPUSeconds+1),
	} {
		var out, errOut strings.Builder
		args := []string{"--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--state", t.TempDir()}
		environ := []string{"SANDBOXD_LIMITS=" + v, "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken)}
		if got := runRefused(t, args, environ, &out, &errOut); got != 2 || !strings.Contains(errOut.String(), "SANDBOXD_LIMITS") || out.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 naming SANDBOXD_LIMITS", v, got, out.String(), errOut.String())
		}
	}
}
