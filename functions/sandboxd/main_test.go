package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
)

const token = "tok-51c0ffee9a7d"

// generous bounds every wait on the process: only a hang fails.
const generous = 30 * time.Second

// build compiles this command into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "sandboxd")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proc is a running sandboxd.
type proc struct {
	cmd    *exec.Cmd
	url    string
	exited chan error
}

// start runs bin with args and env, and reads the listening line.
func start(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, exited: make(chan error, 1)}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { p.exited <- cmd.Wait() }()
	if err != nil {
		t.Fatalf("no listening line: %v (stderr: %s)", err, stderr.String())
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "sandboxd listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("listening line %q", line)
	}
	p.url = url
	return p
}

// wait waits for the process to exit by itself and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(generous):
		t.Fatal("sandboxd did not exit")
		return -1
	}
}

func env(t *testing.T) []string {
	sum := sha256.Sum256([]byte(token))
	return []string{
		"PATH=" + os.Getenv("PATH"), "SANDBOXD_TOKEN_SHA256=" + hex.EncodeToString(sum[:]),
		"AWS_SECRET_ACCESS_KEY=leak", "CAIRN_X=leak", "FOO_API_KEY=leak",
		// t.TempDir workspaces are out of nobody's reach: under root, keep
		// commands as sandboxd's user (shared/sandbox/server tests the switch).
		"SANDBOXD_RUN_AS=self",
	}
}

func TestBinary(t *testing.T) {
	bin := build(t)

	t.Run("serves, then stops when idle", func(t *testing.T) {
		ws := t.TempDir()
		p := start(t, bin, env(t), "--addr", "127.0.0.1:0", "--workspace", ws, "--state", filepath.Join(t.TempDir(), "state"), "--idle-timeout", "300ms")
		c, err := remote.New(p.url, token, remote.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		if err := c.Health(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.WriteFile(ctx, contracts.WriteFileRequest{Path: "hello.txt", Content: "hi\n", CallID: "call-1"}); err != nil {
			t.Fatal(err)
		}
		res, err := c.Exec(ctx, contracts.ExecRequest{Command: "cat hello.txt; env"})
		if err != nil || !strings.HasPrefix(res.Stdout, "hi\n") || strings.Contains(res.Stdout, "leak") || strings.Contains(res.Stdout, "SANDBOXD") {
			t.Fatalf("exec: %+v, %v", res, err)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hi\n" {
			t.Errorf("workspace file: %q, %v", b, err)
		}
		if code := p.wait(t); code != 0 {
			t.Errorf("idle exit code %d, want 0", code)
		}
	})

	t.Run("idle timeout from SANDBOXD_IDLE_TIMEOUT", func(t *testing.T) {
		p := start(t, bin, append(env(t), "SANDBOXD_IDLE_TIMEOUT=300ms"), "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--state", t.TempDir())
		if code := p.wait(t); code != 0 {
			t.Errorf("idle exit code %d, want 0", code)
		}
	})

	t.Run("stops cleanly on SIGTERM", func(t *testing.T) {
		p := start(t, bin, env(t), "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--state", t.TempDir())
		c, err := remote.New(p.url, token, remote.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.ListDir(context.Background(), "."); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t); code != 0 {
			t.Errorf("exit code after SIGTERM %d, want 0", code)
		}
	})

	t.Run("refuses to start without the token hash", func(t *testing.T) {
		cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--state", t.TempDir())
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("got %v, want exit 2", err)
		}
		if !strings.Contains(string(out), "SANDBOXD_TOKEN_SHA256") || strings.Contains(string(out), "listening") {
			t.Errorf("output %q", out)
		}
	})
}
