package dumpable

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// envChild makes the re-executed test binary a child that switches (or
// not) its dumpable flag, says "ready" and waits for its stdin to close.
const envChild = "DUMPABLE_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "":
		os.Exit(m.Run())
	case "off":
		if err := Off(); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
	}
	os.Stdout.WriteString("ready\n")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// nobody is the unprivileged uid the test runs both processes as when it
// runs as root (root's CAP_SYS_PTRACE reads a non-dumpable process anyway).
const nobody = "65534"

// asUser returns argv run as the same unprivileged user as every other
// process the test starts: the test's own uid, or nobody under root.
func asUser(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		return exec.Command(argv[0], argv[1:]...)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("running as root without setpriv: cannot run the reader as an unprivileged user")
	}
	return exec.Command(setpriv, append([]string{"--reuid", nobody, "--regid", nobody, "--clear-groups", "--"}, argv...)...)
}

// binary returns a copy of the test binary the unprivileged user can run.
func binary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "dumpable-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "child")
	raw, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// startChild starts the child in the given mode and returns its pid once it
// is ready; the child ends at cleanup.
func startChild(t *testing.T, bin, mode string) int {
	t.Helper()
	cmd := asUser(t, bin)
	cmd.Env = append(os.Environ(), envChild+"="+mode, "CHILD_SECRET=s3cret")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	return cmd.Process.Pid // setpriv execs the child: same pid
}

// A process of the same (unprivileged) user cannot read the environment of
// a process that switched dumpable off, and can read one that did not.
func TestSameUserCannotReadEnviron(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PR_SET_DUMPABLE is Linux's")
	}
	bin := binary(t)
	read := func(pid int) (string, error) {
		cmd := asUser(t, "cat", "/proc/"+strconv.Itoa(pid)+"/environ")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return stderr.String(), err
		}
		return string(out), nil
	}
	open := startChild(t, bin, "on")
	if got, err := read(open); err != nil || !strings.Contains(got, "CHILD_SECRET=s3cret") {
		t.Fatalf("control: reading a dumpable process's environ: %q, %v; the check would prove nothing", got, err)
	}
	closed := startChild(t, bin, "off")
	got, err := read(closed)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(got, "Permission denied") {
		t.Fatalf("reading a non-dumpable process's environ: %q, %v; want EACCES", got, err)
	}
}

func TestOffAndGet(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PR_SET_DUMPABLE is Linux's")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOffAndGet$")
	if os.Getenv("DUMPABLE_TEST_GET") == "" {
		cmd.Env = append(os.Environ(), "DUMPABLE_TEST_GET=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	if on, err := Get(); err != nil || !on {
		t.Fatalf("before Off: dumpable %v, %v", on, err)
	}
	if err := Off(); err != nil {
		t.Fatal(err)
	}
	if on, err := Get(); err != nil || on {
		t.Fatalf("after Off: dumpable %v, %v", on, err)
	}
}
