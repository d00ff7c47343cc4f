package isolate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// binDir holds the test isolate (testisolate) and, for the probe, a copy
// of this test binary; it is world-readable so they can run as nobody.
var binDir string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == probeArg {
		os.Exit(probe())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-isolate-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "testisolate"), "./internal/testisolate")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test isolate:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// testIsolate is the command for a Runner: the real isolate (Main), or one
// of testisolate's misbehaving modes.
func testIsolate(mode ...string) []string {
	return append([]string{filepath.Join(binDir, "testisolate")}, mode...)
}

// runIsolate evaluates src through a Runner on the real isolate. A Runner
// without a Timeout gets hangGuard: the wall clock is then not what ends
// the evaluation (a CPU, memory, step or output limit is, or the script),
// so a saturated machine, which stretches every run, cannot change the
// outcome.
func runIsolate(t testing.TB, r Runner, src string, maxSteps uint64) contracts.EvalResponse {
	t.Helper()
	if r.Command == nil {
		r.Command = testIsolate()
	}
	if r.Timeout == 0 {
		r.Timeout = hangGuard
	}
	resp, err := r.Evaluate(context.Background(), contracts.EvalRequest{
		Script: src, RunID: "run_isolate", MaxSteps: maxSteps, Now: time.Unix(1e9, 0),
	})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return resp
}

func wantFailed(t testing.TB, resp contracts.EvalResponse, reasons ...string) {
	t.Helper()
	if resp.Status != contracts.EvalFailed {
		t.Fatalf("status %s (value %s), want failed with %q", resp.Status, resp.Value, reasons)
	}
	for _, r := range reasons {
		if strings.Contains(resp.Error, r) {
			return
		}
	}
	t.Fatalf("reason %q, want one of %q", resp.Error, reasons)
}
