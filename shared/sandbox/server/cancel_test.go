package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

// openFIFO creates a FIFO in dir and opens it for reading and writing, so
// neither the test's nor a command's open of it ever waits.
func openFIFO(t *testing.T, dir, name string) *os.File {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A client that merely goes away — its connection dropped, no cancel sent
// — does not stop a mutating call: it runs to its end, and its outcome is
// recorded for the repeat to return.
func TestDisconnectDoesNotStopTheCall(t *testing.T) {
	dir := t.TempDir()
	srv, err := server.New(server.Config{Workspace: dir, StateDir: t.TempDir(), TokenSHA256: tokenHash(testToken)})
	if err != nil {
		t.Fatal(err)
	}
	left := make(chan struct{}) // closed when sandboxd sees the first request's client gone
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-First") != "" {
			context.AfterFunc(r.Context(), func() { close(left) })
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	pids := bufio.NewReader(openFIFO(t, dir, "pid.fifo"))
	release := openFIFO(t, dir, "go.fifo")
	req := contracts.ExecRequest{Command: `echo ran >> runs.txt; echo $$ > pid.fifo; read line < go.fifo; echo "got $line"`, CallID: "call-stay", Timeout: 5 * time.Minute}

	ctx, drop := context.WithCancel(t.Context())
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+proto.Path(proto.MethodExec), bytes.NewReader(mustJSON(t, req)))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set(proto.HeaderAuthorization, bearer)
	hr.Header.Set("X-Test-First", "1")
	sent := make(chan error, 1)
	go func() {
		resp, err := ts.Client().Do(hr)
		if err == nil {
			resp.Body.Close()
		}
		sent <- err
	}()
	line, err := pids.ReadString('\n') // the command runs
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	drop() // the client goes away without a cancel
	if err := <-sent; err == nil {
		t.Fatal("the dropped request got an answer")
	}
	<-left
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the command (pid %d) died with its client's connection: %v", pid, err)
	}
	if _, err := release.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	res, err := client(t, ts.URL).Exec(t.Context(), req) // waits for the first run, then returns its outcome
	if err != nil || res.ExitCode != 0 || res.Stdout != "got go\n" {
		t.Errorf("repeat: %+v, %v; want the first run's own end", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "runs.txt")); err != nil || string(b) != "ran\n" {
		t.Errorf("runs.txt = %q, %v; want one run", b, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d after the call ended: %v", pid, err)
	}
}
