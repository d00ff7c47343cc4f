package backend_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/dumpable"
	"github.com/cairnrun/cairn/shared/embedded/backend"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

// The test binary is also sandboxd (argument "sandboxd-child") and a
// runtime to be killed (argument "runtime-child DATA").
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "sandboxd-child":
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
			code := server.Main(ctx, os.Args[2:], os.Environ(), os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		case "runtime-child":
			os.Exit(runtimeChild(os.Args[2]))
		}
	}
	os.Exit(m.Run())
}

func processConfig(dir string) backend.Config {
	return backend.Config{DataDir: dir, Env: []string{"PATH=" + os.Getenv("PATH")},
		SandboxKind: "process", Sandboxd: []string{os.Args[0], "sandboxd-child"}}
}

// runtimeChild opens the data directory, places a process sandbox for a
// session, prints sandboxd's pid and waits to be killed.
func runtimeChild(dir string) int {
	ctx := context.Background()
	rt, err := backend.New(ctx, processConfig(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := rt.Ports.Journal.CreateSession(ctx, contracts.Session{ID: "ses_orphan"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := rt.Ports.Sandboxes.Acquire(ctx, "ses_orphan", contracts.SandboxSpec{Kind: "process"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := rt.Ports.Journal.GetSession(ctx, "ses_orphan")
	if err != nil || s.Sandbox == nil {
		fmt.Fprintln(os.Stderr, "no sandbox record", err)
		return 1
	}
	fmt.Println(strings.TrimPrefix(s.Sandbox.ID, "pid:"))
	select {} // until killed
}

// gone reports whether pid has exited (gone, or a zombie nobody reaped).
func gone(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	i := strings.LastIndexByte(string(raw), ')')
	return err == nil && i > 0 && len(raw) > i+2 && (raw[i+2] == 'Z' || raw[i+2] == 'X')
}

// A runtime killed with SIGKILL leaves its sandboxd running; the next
// runtime on the data directory stops it at its clean stop, though it did
// not start it.
func TestCleanStopStopsAKilledRuntimesSandboxd(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	dir := filepath.Join(t.TempDir(), "data")
	child := exec.Command(os.Args[0], "runtime-child", dir)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("runtime child said %q, %v", line, err)
	}
	child.Process.Kill()
	child.Wait() // its lock is released: the data directory is free
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if gone(pid) {
		t.Fatal("sandboxd died with its runtime: the test would prove nothing")
	}

	rt, err := backend.New(context.Background(), processConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	if gone(pid) {
		t.Fatal("boot stopped a sandboxd its session still records (it is reused)")
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("sandboxd %d of the killed runtime still runs after the clean stop", pid)
	}
}

// The runtime is not dumpable: no process of its user reads its
// environment or memory through /proc.
func TestRuntimeNotDumpable(t *testing.T) {
	if os.Getenv("EMBEDDED_TEST_DUMPABLE") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRuntimeNotDumpable$")
		cmd.Env = append(os.Environ(), "EMBEDDED_TEST_DUMPABLE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	rt := mustOpen(t, filepath.Join(t.TempDir(), "data"))
	defer rt.Close()
	if on, err := dumpable.Get(); err != nil || on {
		t.Fatalf("after New: dumpable %v, %v", on, err)
	}
}
