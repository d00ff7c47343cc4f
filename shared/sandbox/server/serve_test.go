package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/testkit/conformance/sandboxtest"
)

// generous bounds every wait in these tests (a stop, a file a command
// writes, a killed process's exit): far above what it takes even on a
// saturated machine, so only a hang fails.
const generous = time.Minute

// serving runs Serve on a loopback listener and returns its URL, the ctx
// cancel that stops it and the channel Serve's result arrives on.
func serving(t *testing.T, cfg server.Config) (url string, stop context.CancelFunc, done <-chan error) {
	t.Helper()
	cfg.TokenSHA256 = tokenHash(testToken)
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- srv.Serve(ctx, ln) }()
	t.Cleanup(cancel)
	return "http://" + ln.Addr().String(), cancel, ch
}

func waitDone(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(generous):
		t.Fatal("Serve did not return")
	}
}

// waitFile polls until the command under test has written name.
func waitFile(t *testing.T, name string) string {
	t.Helper()
	deadline := time.Now().Add(generous)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(name); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", name)
		}
		<-tick.C
	}
}

// Serve returns by itself once idle, but not while a request runs. The
// request runs until the test lets it end (it waits for a file), well past
// the idle timeout (the test sleeps at least twice that: a slow machine
// only makes it longer), and a second request made meanwhile finds the
// server up. The idle timer is real, so a machine too slow to begin the
// first request within the timeout finds the server stopping already: then
// the run is repeated with twice the timeout. A server that stops while a
// request runs fails at every timeout.
func TestServeIdleTimeout(t *testing.T) {
	for idle := 300 * time.Millisecond; idle <= 20*time.Second; idle *= 2 {
		if serveIdle(t, idle) {
			return
		}
	}
	t.Fatal("at every idle timeout up to 20s, the server stopped while a call ran")
}

// serveIdle is one run of TestServeIdleTimeout; false when the server was
// not up throughout the call.
func serveIdle(t *testing.T, idle time.Duration) bool {
	dir := t.TempDir()
	url, _, done := serving(t, server.Config{Workspace: dir, IdleTimeout: idle})
	c := client(t, url)
	got := make(chan error, 1)
	go func() {
		res, err := c.Exec(context.Background(), contracts.ExecRequest{
			Command: "echo started > started; while [ ! -f go ]; do sleep 0.01; done; echo ran", Timeout: generous})
		if err == nil && res.Stdout != "ran\n" {
			err = fmt.Errorf("result %+v", res)
		}
		got <- err
	}()
	started := filepath.Join(dir, "started")
	for range int(generous / (5 * time.Millisecond)) {
		if b, err := os.ReadFile(started); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		select {
		case err := <-got:
			if !errors.Is(err, contracts.ErrUnavailable) {
				t.Fatalf("the call ended before it started: %v", err)
			}
			t.Logf("idle timeout %s: the server stopped before the call began (%v)", idle, err)
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(2 * idle) // at least: the idle timeout passes while the call runs
	_, statErr := c.Stat(t.Context(), ".")
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	callErr := <-got
	if statErr != nil || callErr != nil {
		// Either the server stopped while the call ran, or it had decided
		// to stop before the call began; only the second goes away with a
		// longer timeout.
		t.Logf("idle timeout %s: during the call: %v; the call: %v", idle, statErr, callErr)
		return false
	}
	waitDone(t, done)
	if _, err := c.Stat(t.Context(), "."); !errors.Is(err, contracts.ErrUnavailable) {
		t.Errorf("after the idle stop: %v, want ErrUnavailable", err)
	}
	return true
}

// On ctx end, in-flight requests finish within the grace period. The
// request waits for a file the test writes only once the server has
// stopped accepting connections, so it is in flight during the shutdown
// however fast or slow the machine.
func TestServeGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	url, stop, done := serving(t, server.Config{Workspace: dir, ShutdownGrace: generous})
	c := client(t, url)
	got := make(chan contracts.ExecResult, 1)
	go func() {
		res, err := c.Exec(context.Background(), contracts.ExecRequest{
			Command: "echo started > started; while [ ! -f go ]; do sleep 0.01; done; echo finished", Timeout: generous})
		if err != nil {
			t.Errorf("in-flight exec: %v", err)
		}
		got <- res
	}()
	waitFile(t, filepath.Join(dir, "started"))
	stop()
	addr := strings.TrimPrefix(url, "http://")
	refused := false
	for range int(generous / (5 * time.Millisecond)) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			refused = true
			break
		}
		conn.Close()
		time.Sleep(5 * time.Millisecond)
	}
	if !refused {
		t.Fatal("the server still accepts connections after its context ended")
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done)
	if res := <-got; res.Stdout != "finished\n" {
		t.Errorf("in-flight exec = %+v", res)
	}
}

// Past the grace period, running commands are killed and Serve returns.
func TestServeGraceExpires(t *testing.T) {
	dir := t.TempDir()
	url, stop, done := serving(t, server.Config{Workspace: dir, ShutdownGrace: 100 * time.Millisecond})
	c := client(t, url)
	failed := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), contracts.ExecRequest{Command: "echo $$ > pid; exec sleep 600", Timeout: 10 * time.Minute})
		failed <- err
	}()
	pid, err := strconv.Atoi(waitFile(t, filepath.Join(dir, "pid")))
	if err != nil {
		t.Fatal(err)
	}
	stop()
	waitDone(t, done)
	if err := <-failed; err == nil {
		t.Error("the cut-off exec reported success")
	}
	if !sandboxtest.Exits(t, pid) {
		t.Errorf("command %d outlived the server", pid)
	}
}

// runMain runs Main in-process and returns the URL it announced.
func runMain(t *testing.T, ctx context.Context, args, environ []string) (url string, code <-chan int) {
	t.Helper()
	r, w := io.Pipe()
	ch := make(chan int, 1)
	go func() {
		ch <- server.Main(ctx, args, environ, w, io.Discard)
		w.Close()
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	go io.Copy(io.Discard, r)
	if err != nil {
		t.Fatalf("no listening line (exit %d): %v", <-ch, err)
	}
	url, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "sandboxd listening on ")
	if !ok || !(strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasPrefix(url, "https://127.0.0.1:")) {
		t.Fatalf("listening line %q", line)
	}
	return url, ch
}

func TestMainCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := reachableDir(t) // as root, commands run as nobody
	environ := []string{
		"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken),
		"AWS_SECRET_ACCESS_KEY=leak", "CAIRN_X=leak", "FOO_API_KEY=leak",
		// Secrets a denylist does not recognise: only the allowlist keeps them out.
		"DATABASE_URL=postgres://u:leak@db/x", "GITHUB_PAT=ghp_leak", "SLACK_WEBHOOK_URL=https://hooks.slack.com/leak", "VISIBLE=leak",
	}
	url, code := runMain(t, ctx, []string{"--addr", "127.0.0.1:0", "--workspace", dir, "--state", filepath.Join(t.TempDir(), "state")}, environ)
	c := client(t, url)
	if err := c.Health(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(t.Context(), contracts.ExecRequest{Command: "env; pwd", CallID: "call-env"})
	if err != nil || !strings.Contains(res.Stdout, "LANG=C.UTF-8") {
		t.Fatalf("exec: %+v, %v", res, err)
	}
	for _, bad := range []string{"leak", "SANDBOXD_", "DATABASE_URL", "GITHUB_PAT", "SLACK_WEBHOOK_URL", tokenHash(testToken)} {
		if strings.Contains(res.Stdout, bad) {
			t.Errorf("command sees %q", bad)
		}
	}
	if out, err := c.CallOutcome(t.Context(), "call-env"); err != nil || out.State != contracts.CallDone {
		t.Errorf("--state gives a ledger: %+v, %v", out, err)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit %d after ctx end, want 0", got)
	}
}

func TestMainRefuses(t *testing.T) {
	hash := "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ws, st := reachableDir(t), t.TempDir()
	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		code    int
	}{
		{"no token hash", []string{"--addr", "127.0.0.1:0", "--workspace", ws, "--state", st}, nil, 2},
		{"empty token hash", []string{"--addr", "127.0.0.1:0", "--workspace", ws, "--state", st}, []string{"SANDBOXD_TOKEN_SHA256="}, 2},
		{"malformed token hash", []string{"--addr", "127.0.0.1:0", "--workspace", ws, "--state", st}, []string{"SANDBOXD_TOKEN_SHA256=xyz"}, 2},
		{"no workspace", []string{"--addr", "127.0.0.1:0", "--state", st}, []string{hash}, 2},
		{"no state", []string{"--addr", "127.0.0.1:0", "--workspace", ws}, []string{hash}, 2},
		{"unknown flag", []string{"--workspace", ws, "--state", st, "--port", "1"}, []string{hash}, 2},
		{"extra argument", []string{"--workspace", ws, "--state", st, "extra"}, []string{hash}, 2},
		{"address in use", []string{"--addr", busy.Addr().String(), "--workspace", ws, "--state", st}, []string{hash}, 1},
	} {
		var out, errOut strings.Builder
		if got := server.Main(t.Context(), tc.args, tc.environ, &out, &errOut); got != tc.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.name, got, tc.code, errOut.String())
		}
		if tc.code == 2 && out.Len() != 0 {
			t.Errorf("%s: printed %q", tc.name, out.String())
		}
		if errOut.Len() == 0 {
			t.Errorf("%s: no message on stderr", tc.name)
		}
	}
}
