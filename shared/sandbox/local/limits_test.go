package local

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/conformance/sandboxtest"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not available")
	}
}

// Each limit trips with its named marker; a command under the limits but
// within them runs as usual.
func TestLimitsTrip(t *testing.T) {
	t.Logf("containment: %s", HostContainment())
	tests := []struct {
		name    string
		limits  contracts.SandboxLimits
		python  bool
		command string
		marker  string
	}{
		{"cpu_seconds", contracts.SandboxLimits{CPUSeconds: 1}, false, "while :; do :; done", "[cpu_seconds limit (1 s) reached]"},
		{"file_size_mib", contracts.SandboxLimits{FileSizeMiB: 1}, false, "dd if=/dev/zero of=big bs=1M count=2 2>/dev/null", "[file_size_mib limit (1 MiB) reached]"},
		{"memory_mib", contracts.SandboxLimits{MemoryMiB: 100}, true, "python3 -c 'b = bytearray(1 << 30); print(len(b))'", "[memory_mib limit (100 MiB) reached]"},
		// A fork bomb bounded by its loop: 40 sleeping children, 20 allowed.
		{"pids", contracts.SandboxLimits{Pids: 20}, true, `python3 -c '
import os, sys
for i in range(40):
    try:
        pid = os.fork()
    except OSError as e:
        print(e, file=sys.stderr)
        sys.exit(3)
    if pid == 0:
        os.execvp("sleep", ["sleep", "100000"])
'`, "[pids limit (20) reached]"},
		{"workspace_mib", contracts.SandboxLimits{WorkspaceMiB: 1}, false, "head -c 2097152 /dev/zero > big", "[workspace_mib limit (1 MiB) reached]"},
	}
	modes := []Containment{HostContainment()}
	if modes[0] == ContainCgroup2 {
		modes = append(modes, ContainSubreaper) // the rlimits alone
	}
	for _, mode := range modes {
		for _, tc := range tests {
			t.Run(string(mode)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				testLimitTrips(t, mode, tc.limits, tc.python, tc.name, tc.command, tc.marker)
			})
		}
	}
}

func testLimitTrips(t *testing.T, mode Containment, lim contracts.SandboxLimits, python bool, name, command, marker string) {
	t.Helper()
	if python {
		needPython(t)
	}
	if name == "pids" && mode != ContainCgroup2 && os.Geteuid() == 0 {
		t.Skip("no pids cgroup, and RLIMIT_NPROC does not bind root")
	}
	sb := newLocal(t, Options{Limits: lim})
	sb.contain = mode
	ok, err := sb.Exec(t.Context(), contracts.ExecRequest{Command: "echo within", Timeout: 10 * time.Minute})
	if err != nil || ok.ExitCode != 0 || ok.Stdout != "within\n" || ok.Stderr != "" {
		t.Fatalf("a command within the limits: %+v, %v", ok, err)
	}
	res, err := sb.Exec(t.Context(), contracts.ExecRequest{Command: command, Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || res.TimedOut || !strings.HasSuffix(res.Stderr, marker) {
		t.Errorf("got %+v, want a failure ending its stderr with %q", res, marker)
	}
}

func TestLimitFileSizeNamesOnlyItself(t *testing.T) {
	sb := newLocal(t, Options{Limits: contracts.SandboxLimits{FileSizeMiB: 1, CPUSeconds: 100, WorkspaceMiB: 10}})
	res, err := sb.Exec(t.Context(), contracts.ExecRequest{Command: "head -c 100000 /dev/zero > small && exit 7", Timeout: 10 * time.Minute})
	if err != nil || res.ExitCode != 7 || res.Stderr != "" {
		t.Errorf("a plain failure within the limits: %+v, %v", res, err)
	}
}

func TestLimitWorkspaceRefusesWrites(t *testing.T) {
	sb := newLocal(t, Options{Limits: contracts.SandboxLimits{WorkspaceMiB: 1}})
	ctx := t.Context()
	big := strings.Repeat("x", 600<<10)
	if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "a", Content: big}); err != nil {
		t.Fatalf("a write within the limit: %v", err)
	}
	err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "b", Content: big})
	if !errors.Is(err, contracts.ErrTooLarge) || !strings.Contains(err.Error(), "workspace_mib limit (1 MiB) reached") {
		t.Errorf("a write over the limit: %v, want ErrTooLarge naming workspace_mib", err)
	}
	if _, err := os.Stat(filepath.Join(sb.Root(), "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused write made b: %v", err)
	}
}

// deadRunnerEnv makes the test binary a runtime that starts a call and is
// killed mid-call (TestDeadRunnerHelper).
const deadRunnerEnv = "CAIRN_TEST_DEAD_RUNNER"

// TestDeadRunnerHelper is the runtime TestDeadRunnerLeftoversKilled kills:
// it runs one call whose command leaves a setsid child, and never returns.
func TestDeadRunnerHelper(t *testing.T) {
	dir := os.Getenv(deadRunnerEnv)
	if dir == "" {
		t.Skip("a helper process of TestDeadRunnerLeftoversKilled")
	}
	sb, err := New(filepath.Join(dir, "ws"), Options{StateDir: filepath.Join(dir, "state"), Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	if m := os.Getenv(deadRunnerEnv + "_MODE"); m != "" {
		sb.contain = Containment(m)
	}
	_, err = sb.Exec(t.Context(), contracts.ExecRequest{
		CallID:  "call-dead",
		Command: `setsid sh -c 'echo $$ > ../left.fifo; exec sleep 100000' </dev/null >/dev/null 2>&1 & echo $$ > ../main.fifo; exec sleep 100000`,
		Timeout: 10 * time.Minute,
	})
	t.Fatalf("the call returned: %v", err)
}

// A runtime that died mid-call left the call's processes running (its
// command, and a setsid child); a later one asked about the call kills
// them before it answers that the outcome is unknown.
func TestDeadRunnerLeftoversKilled(t *testing.T) {
	if HostContainment() != ContainCgroup2 {
		t.Skip("without cgroups a dead runner's leftovers are found by process group only (a setsid child escapes)")
	}
	testDeadRunner(t, ContainCgroup2)
}

// Under the subreaper, the reaper itself kills the call's processes when
// the runtime dies (PR_SET_PDEATHSIG).
func TestDeadRunnerSubreaper(t *testing.T) {
	if HostContainment() == ContainProcessGroup {
		t.Skip("no subreaper on this host")
	}
	testDeadRunner(t, ContainSubreaper)
}

func testDeadRunner(t *testing.T, mode Containment) {
	dir := t.TempDir()
	for _, f := range []string{"left.fifo", "main.fifo"} {
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestDeadRunnerHelper$", "-test.count=1")
	helper.Env = append(os.Environ(), deadRunnerEnv+"="+dir, deadRunnerEnv+"_MODE="+string(mode))
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	readPid := func(name string) int {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name)) // blocks until the command writes it
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %q", name, b)
		}
		return pid
	}
	left, main := readPid("left.fifo"), readPid("main.fifo")
	t.Cleanup(func() {
		_ = syscall.Kill(left, syscall.SIGKILL)
		_ = syscall.Kill(main, syscall.SIGKILL)
	})
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if mode == ContainSubreaper {
		for name, pid := range map[string]int{"the command": main, "its setsid child": left} {
			if !sandboxtest.Exits(t, pid) {
				t.Errorf("%s (pid %d) survived its runtime", name, pid)
			}
		}
		return
	}
	for _, pid := range []int{main, left} {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil || strings.Contains(string(b), ") Z") {
			t.Fatalf("pid %d is gone already: the dead runner left nothing to kill", pid)
		}
	}

	sb, err := New(filepath.Join(dir, "ws"), Options{StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := sb.CallOutcome(t.Context(), "call-dead")
	if err != nil || out.State != contracts.CallUnknown {
		t.Fatalf("CallOutcome = %+v, %v: want unknown", out, err)
	}
	for name, pid := range map[string]int{"the command": main, "its setsid child": left} {
		if !sandboxtest.Exits(t, pid) {
			t.Errorf("%s (pid %d) survived the dead runner's call being looked up", name, pid)
		}
	}
}
