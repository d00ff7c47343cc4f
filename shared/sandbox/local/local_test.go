package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/conformance/sandboxtest"
)

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) (contracts.SandboxAPI, string) {
		dir := t.TempDir()
		sb, err := New(dir, Options{Env: os.Environ(), StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return sb, dir
	})
}

// The suite again with the containment of a host without a writable cgroup
// v2: the subreaper.
func TestConformanceSubreaper(t *testing.T) {
	if HostContainment() == ContainProcessGroup {
		t.Skip("no subreaper on this host")
	}
	sandboxtest.Run(t, func(t *testing.T) (contracts.SandboxAPI, string) {
		sb := newLocal(t, Options{Env: os.Environ(), StateDir: t.TempDir()})
		sb.contain = ContainSubreaper
		return sb, sb.Root()
	})
}

func newLocal(t *testing.T, opts Options) *Sandbox {
	t.Helper()
	sb, err := New(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func TestExecEnvFromOptions(t *testing.T) {
	sb := newLocal(t, Options{Env: []string{
		"PATH=" + os.Getenv("PATH"), "VISIBLE=yes", "FOO_API_KEY=leak1", "CAIRN_SECRET=leak2",
		"AWS_SECRET_ACCESS_KEY=leak3", "GH_TOKEN=leak4", "HOME=/somewhere/else",
	}})
	res, err := sb.Exec(t.Context(), contracts.ExecRequest{Command: "env"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stdout, "VISIBLE=yes\n") || !strings.Contains(res.Stdout, "HOME="+sb.Root()+"\n") {
		t.Errorf("env lacks VISIBLE or HOME:\n%s", res.Stdout)
	}
	if strings.Contains(res.Stdout, "leak") {
		t.Errorf("secret reached the command:\n%s", res.Stdout)
	}
}

func TestLimits(t *testing.T) {
	ctx := t.Context()
	sb := newLocal(t, Options{ReadCap: 10, MaxWrite: 20, OutputCap: 8, Env: os.Environ()})

	err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "big", Content: strings.Repeat("x", 21)})
	if !errors.Is(err, contracts.ErrTooLarge) {
		t.Errorf("write over MaxWrite: %v", err)
	}
	if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "f", Content: "0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}
	got, err := sb.ReadFile(ctx, contracts.ReadFileRequest{Path: "f"})
	if err != nil || got.Content != "0123456789" || !got.Truncated || got.Size != 16 {
		t.Errorf("read over ReadCap = %+v, %v", got, err)
	}
	got, err = sb.ReadFile(ctx, contracts.ReadFileRequest{Path: "f", Offset: 10, Limit: 100})
	if err != nil || got.Content != "abcdef" || got.Truncated {
		t.Errorf("read the rest = %+v, %v", got, err)
	}
	_, err = sb.EditFile(ctx, contracts.EditFileRequest{Path: "f", Old: "0", New: strings.Repeat("y", 10)})
	if !errors.Is(err, contracts.ErrTooLarge) {
		t.Errorf("edit growing past MaxWrite: %v", err)
	}

	res, err := sb.Exec(ctx, contracts.ExecRequest{Command: "printf 0123456789; printf abc >&2"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "01234567\n[output truncated: 2 bytes omitted]" || res.Stderr != "abc" || !res.Truncated {
		t.Errorf("capped exec = %+v", res)
	}
	// A multi-byte rune is never cut in half: "ééééé" is 10 bytes.
	res, err = sb.Exec(ctx, contracts.ExecRequest{Command: "printf 'aééééé'"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "aééé\n[output truncated: 4 bytes omitted]" {
		t.Errorf("rune boundary: %q", res.Stdout)
	}
	_, err = sb.Exec(ctx, contracts.ExecRequest{Command: "cat", Stdin: strings.Repeat("x", 21)})
	if !errors.Is(err, contracts.ErrTooLarge) {
		t.Errorf("stdin over MaxWrite: %v", err)
	}
}

func TestExecTimeoutClamp(t *testing.T) {
	sb := newLocal(t, Options{DefaultTimeout: time.Hour, MaxTimeout: 200 * time.Millisecond})
	// Only MaxTimeout can make this a timed-out result: the request asks
	// for an hour, and the guard, which would end a call that ignored
	// MaxTimeout, cancels (an error, not a timeout).
	ctx, cancel := context.WithCancel(t.Context())
	defer time.AfterFunc(hangGuard, cancel).Stop()
	res, err := sb.Exec(ctx, contracts.ExecRequest{Command: "sleep 100000", Timeout: time.Hour})
	if err != nil || !res.TimedOut {
		t.Fatalf("got %+v, %v; want MaxTimeout's timed-out result", res, err)
	}
}

func TestExecCancel(t *testing.T) {
	sb := newLocal(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := sb.Exec(ctx, contracts.ExecRequest{Command: "sleep 100000"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled exec: %v", err)
	}
}

func TestExecSignalExitCode(t *testing.T) {
	sb := newLocal(t, Options{})
	res, err := sb.Exec(t.Context(), contracts.ExecRequest{Command: "kill -9 $$"})
	if err != nil || res.ExitCode != 137 || res.TimedOut {
		t.Errorf("got %+v, %v; want exit 137", res, err)
	}
}

// Processes a command leaves behind in its group are killed when it exits.
func TestExecLeftoversKilled(t *testing.T) {
	sb := newLocal(t, Options{})
	res, err := sb.Exec(t.Context(), contracts.ExecRequest{Command: "sleep 100000 >/dev/null 2>&1 & echo $!"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("got %+v, %v", res, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if err != nil {
		t.Fatal(err)
	}
	if !exits(t, pid) {
		t.Fatalf("leftover %d still runs", pid)
	}
}

// A process that leaves the group (setsid) and keeps the pipes open cannot
// hang the call beyond pipeGrace: it never ends by itself, so the call
// returning at all (the guard would cancel it, an error) is the proof, on
// a machine of any speed.
func TestExecEscapedChildDoesNotHang(t *testing.T) {
	sb := newLocal(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer time.AfterFunc(hangGuard, cancel).Stop()
	res, err := sb.Exec(ctx, contracts.ExecRequest{Command: "setsid sleep 100000 & echo $!"})
	if err != nil {
		t.Fatalf("the escaped child held the call: %v", err)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if perr != nil {
		t.Fatalf("got %+v: want the escaped child's pid", res)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Errorf("the escaped child %d: %v", pid, err)
	}
}

// hangGuard bounds waits that end much sooner on any machine (a killed
// process's exit, a call that must return): it only turns a hang into a
// failure, it is not a margin a slow run could reach.
const hangGuard = time.Minute

// exits waits for process pid to end (sandboxtest.Exits: a pidfd).
func exits(t *testing.T, pid int) bool {
	t.Helper()
	return sandboxtest.Exits(t, pid)
}

func TestGrepGlobBaseName(t *testing.T) {
	sb := newLocal(t, Options{})
	ctx := t.Context()
	for _, p := range []string{"a.go", "x/b.go", "x/c.txt"} {
		if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: p, Content: "hit\n"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sb.Grep(ctx, contracts.GrepRequest{Pattern: "hit", Glob: "*.go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Matches) != 2 || got.Matches[0].Path != "a.go" || got.Matches[1].Path != "x/b.go" {
		t.Errorf("glob *.go = %+v", got.Matches)
	}
	got, err = sb.Grep(ctx, contracts.GrepRequest{Pattern: "hit", Glob: "x/*"})
	if err != nil || len(got.Matches) != 2 {
		t.Errorf("glob x/* = %+v, %v", got.Matches, err)
	}
}

func TestProvider(t *testing.T) {
	ctx := t.Context()
	base := t.TempDir()
	p := NewProvider(base, Options{})
	api, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.WriteFile(ctx, contracts.WriteFileRequest{Path: "kept.txt", Content: "k"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx, "sess-01"); err != nil {
		t.Fatal(err)
	}
	again, err := p.Acquire(ctx, "sess-01", contracts.SandboxSpec{Kind: "local"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.ReadFile(ctx, contracts.ReadFileRequest{Path: "kept.txt"}); err != nil || got.Content != "k" {
		t.Errorf("files not kept across Release: %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(base, "sess-01", "kept.txt")); err != nil {
		t.Errorf("workspace not under base: %v", err)
	}
	for _, id := range []string{"", ".", "..", "../x", "a/b", ".hidden", "a\x00b", strings.Repeat("x", 129), "sp ace"} {
		if _, err := p.Acquire(ctx, id, contracts.SandboxSpec{}); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("Acquire(%q): %v, want ErrInvalid", id, err)
		}
	}
	if _, err := p.Acquire(ctx, "s", contracts.SandboxSpec{Kind: "fargate"}); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("Acquire fargate: %v", err)
	}
}

func TestNewLocalRoot(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "ln")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	sb, err := New(filepath.Join(link, "a", "b"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	if sb.Root() != filepath.Join(realDir, "a", "b") {
		t.Errorf("root = %s, want it created and resolved under %s", sb.Root(), realDir)
	}
	if _, err := New("", Options{}); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("empty root: %v", err)
	}
}

// A command gets its call's TRACEPARENT, and only a well-formed one.
func TestExecTraceparent(t *testing.T) {
	sb := newLocal(t, Options{Env: []string{"PATH=" + os.Getenv("PATH"), "TRACEPARENT=00-runtime-own"}})
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct{ give, want string }{{tp, tp}, {"bogus\nX=1", ""}, {"", ""}} {
		res, err := sb.Exec(t.Context(), contracts.ExecRequest{Command: `printf %s "${TRACEPARENT-}"`, Traceparent: c.give})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stdout != c.want { // never the runtime's own
			t.Errorf("Traceparent %q: the command saw %q, want %q", c.give, res.Stdout, c.want)
		}
	}
}
