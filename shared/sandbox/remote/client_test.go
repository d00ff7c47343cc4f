package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

func TestNewRefusesBadInput(t *testing.T) {
	for _, tc := range []struct{ endpoint, token string }{
		{"", testToken}, {"ftp://host", testToken}, {"http://", testToken}, {"http://u:p@host", testToken},
		{"http://host", ""}, {"http://host", "a b"}, {"http://host", "a\nb"},
	} {
		_, err := remote.New(tc.endpoint, tc.token, remote.Options{})
		if !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("New(%q, %q): %v, want ErrInvalid", tc.endpoint, tc.token, err)
		}
		if err != nil && tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Errorf("error reveals the token: %v", err)
		}
	}
}

// Errors keep their meaning across the wire.
func TestErrorsKeepMeaning(t *testing.T) {
	dir := t.TempDir()
	url := serve(t, server.Config{Workspace: dir, MaxBody: 4096, Sandbox: local.Options{MaxWrite: 100}})
	c := newClient(t, url, remote.Options{})
	ctx := t.Context()
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	bad, err := remote.New(url, "wrong-token", remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()

	_, errNotFound := c.ReadFile(ctx, contracts.ReadFileRequest{Path: "missing.txt"})
	_, errEscape := c.ReadFile(ctx, contracts.ReadFileRequest{Path: "../x"})
	_, errLink := c.ListDir(ctx, "out")
	_, errAbs := c.Stat(ctx, "/etc/passwd")
	_, errToken := bad.ReadFile(ctx, contracts.ReadFileRequest{Path: "x"})
	errWrite := c.WriteFile(ctx, contracts.WriteFileRequest{Path: "big", Content: strings.Repeat("x", 101)})
	errBody := c.WriteFile(ctx, contracts.WriteFileRequest{Path: "huge", Content: strings.Repeat("x", 5000)})
	_, errEdit := c.EditFile(ctx, contracts.EditFileRequest{Path: "missing.txt", Old: "a", New: "b"})
	_, errExec := c.Exec(ctx, contracts.ExecRequest{})
	errExists := c.MakeDir(ctx, ".")
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, errDeadline := c.Exec(short, contracts.ExecRequest{Command: "sleep 30", Timeout: time.Second})

	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"missing file", errNotFound, contracts.ErrNotFound},
		{"..", errEscape, contracts.ErrPermission},
		{"symlink out", errLink, contracts.ErrPermission},
		{"absolute path", errAbs, contracts.ErrPermission},
		{"wrong token", errToken, contracts.ErrPermission},
		{"write over MaxWrite", errWrite, contracts.ErrTooLarge},
		{"body over MaxBody", errBody, contracts.ErrTooLarge},
		{"edit missing", errEdit, contracts.ErrNotFound},
		{"empty command", errExec, contracts.ErrInvalid},
		{"client deadline", errDeadline, contracts.ErrTimeout},
		{"client deadline (context)", errDeadline, context.DeadlineExceeded},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
		if tc.err != nil && strings.Contains(tc.err.Error(), testToken) {
			t.Errorf("%s: error reveals the token", tc.name)
		}
	}
	if errExists != nil && !errors.Is(errExists, contracts.ErrPermission) && !errors.Is(errExists, contracts.ErrExists) {
		t.Errorf("make_dir .: %v", errExists)
	}
	if _, err := os.Lstat(filepath.Join(dir, "huge")); err == nil {
		t.Error("an oversized body was written")
	}
	if strings.Contains(errNotFound.Error(), dir) {
		t.Errorf("error reveals the host path: %v", errNotFound)
	}
}

// A proxy's answer without a protocol body is classified by its status; a
// protocol error keeps its code.
func TestErrorAnswers(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   error
	}{
		{http.StatusGatewayTimeout, `{"error":{"code":"timeout","message":"took too long"}}`, contracts.ErrTimeout},
		{http.StatusGatewayTimeout, `<html>gateway timeout</html>`, contracts.ErrTimeout},
		{http.StatusBadGateway, `bad gateway`, contracts.ErrUnavailable},
		{http.StatusConflict, `{"error":{"code":"conflict","message":"recorded for a different request"}}`, contracts.ErrConflict},
		{http.StatusConflict, `{"error":{"code":"exists","message":"exists"}}`, contracts.ErrExists},
		{http.StatusUnauthorized, `{"error":{"code":"unauthorized","message":"no"}}`, contracts.ErrPermission},
		{http.StatusRequestEntityTooLarge, ``, contracts.ErrTooLarge},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		}))
		c := newClient(t, srv.URL, remote.Options{Retries: -1})
		err := c.Remove(t.Context(), "x", false)
		if !errors.Is(err, tc.want) {
			t.Errorf("%d %q: %v, want %v", tc.status, tc.body, err, tc.want)
		}
		srv.Close()
	}
}

// A dead endpoint is ErrUnavailable once the retries are spent (their
// backoffs sum to well under a second): no call waits for anything else.
// The guard, which would cancel a call that did (a context error, not
// ErrUnavailable), is far beyond the backoffs on any machine.
func TestDeadEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	c := newClient(t, url, remote.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer time.AfterFunc(time.Minute, cancel).Stop()
	_, errRead := c.ReadFile(ctx, contracts.ReadFileRequest{Path: "x"})
	errWrite := c.WriteFile(ctx, contracts.WriteFileRequest{Path: "x", Content: "y"})
	errHealth := c.Health(ctx)
	_, errCalls := c.CallOutcome(ctx, "call-1")
	for name, err := range map[string]error{"read": errRead, "write": errWrite, "health": errHealth, "calls": errCalls} {
		if !errors.Is(err, contracts.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", name, err)
		}
	}
}

func TestHealth(t *testing.T) {
	url := serve(t, server.Config{Workspace: t.TempDir()})
	if err := newClient(t, url, remote.Options{}).Health(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Health needs no token: a client with a wrong one still sees it up.
	bad, err := remote.New(url, "wrong", remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Health(t.Context()); err != nil {
		t.Fatal(err)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok":true,"protocol":2}`))
	}))
	defer other.Close()
	if err := newClient(t, other.URL, remote.Options{}).Health(t.Context()); !errors.Is(err, contracts.ErrUnavailable) {
		t.Errorf("another protocol: %v, want ErrUnavailable", err)
	}
}

// flaky serves a sandboxd handler behind a proxy that answers 503 to the
// first fail requests, counting every request.
func flaky(t *testing.T, dir string, fail int32) (url string, hits *atomic.Int32) {
	t.Helper()
	srv, err := server.New(server.Config{Workspace: dir, StateDir: t.TempDir(), TokenSHA256: tokenHash(testToken)})
	if err != nil {
		t.Fatal(err)
	}
	hits = new(atomic.Int32)
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= fail {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"warming up"}}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, hits
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name     string
		call     func(ctx context.Context, c *remote.Client) error
		wantHits int32
		wantErr  error
	}{
		{"read-only call retried", func(ctx context.Context, c *remote.Client) error {
			_, err := c.ReadFile(ctx, contracts.ReadFileRequest{Path: "seed.txt"})
			return err
		}, 2, nil},
		{"calls query retried", func(ctx context.Context, c *remote.Client) error {
			_, err := c.CallOutcome(ctx, "call-x")
			return err
		}, 2, nil},
		{"write without call id not retried", func(ctx context.Context, c *remote.Client) error {
			return c.WriteFile(ctx, contracts.WriteFileRequest{Path: "w.txt", Content: "w"})
		}, 1, contracts.ErrUnavailable},
		{"exec without call id not retried", func(ctx context.Context, c *remote.Client) error {
			_, err := c.Exec(ctx, contracts.ExecRequest{Command: "echo ran >> w.txt"})
			return err
		}, 1, contracts.ErrUnavailable},
		{"remove not retried", func(ctx context.Context, c *remote.Client) error {
			return c.Remove(ctx, "seed.txt", false)
		}, 1, contracts.ErrUnavailable},
		{"write with call id retried", func(ctx context.Context, c *remote.Client) error {
			return c.WriteFile(ctx, contracts.WriteFileRequest{Path: "w.txt", Content: "w", CallID: "call-w"})
		}, 2, nil},
		{"exec with call id retried", func(ctx context.Context, c *remote.Client) error {
			_, err := c.Exec(ctx, contracts.ExecRequest{Command: "echo ran >> w.txt", CallID: "call-e"})
			return err
		}, 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "seed.txt"), []byte("seed"), 0o644); err != nil {
				t.Fatal(err)
			}
			url, hits := flaky(t, dir, 1)
			err := tc.call(t.Context(), newClient(t, url, remote.Options{}))
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if got := hits.Load(); got != tc.wantHits {
				t.Errorf("server saw %d requests, want %d", got, tc.wantHits)
			}
			if tc.wantErr != nil {
				if _, err := os.Stat(filepath.Join(dir, "w.txt")); err == nil {
					t.Error("a refused mutating call took effect")
				}
			}
		})
	}
}

// Retries stop at Options.Retries.
func TestRetriesBounded(t *testing.T) {
	url, hits := flaky(t, t.TempDir(), 100)
	_, err := newClient(t, url, remote.Options{Retries: 2}).Stat(t.Context(), ".")
	if !errors.Is(err, contracts.ErrUnavailable) || hits.Load() != 3 {
		t.Errorf("err %v after %d requests, want ErrUnavailable after 3", err, hits.Load())
	}
}

// A mutating call with a call id runs once however often it is sent, and
// the calls query reports its outcome.
func TestEffectOnce(t *testing.T) {
	dir := t.TempDir()
	url := serve(t, server.Config{Workspace: dir, StateDir: t.TempDir()})
	c := newClient(t, url, remote.Options{})
	ctx := t.Context()
	out, err := c.CallOutcome(ctx, "call-1")
	if err != nil || out.State != contracts.CallUnknown || out.CallID != "call-1" {
		t.Fatalf("before: %+v, %v", out, err)
	}
	req := contracts.ExecRequest{Command: "echo ran >> log.txt; wc -l < log.txt", CallID: "call-1"}
	for range 3 {
		res, err := c.Exec(ctx, req)
		if err != nil || strings.TrimSpace(res.Stdout) != "1" {
			t.Fatalf("exec: %+v, %v", res, err)
		}
	}
	out, err = c.CallOutcome(ctx, "call-1")
	if err != nil || out.State != contracts.CallDone || out.Method != proto.MethodExec || !strings.Contains(string(out.Result), `"exit_code":0`) {
		t.Errorf("after: %+v (%s), %v", out, out.Result, err)
	}
	req.Command = "echo other"
	if _, err := c.Exec(ctx, req); !errors.Is(err, contracts.ErrConflict) {
		t.Errorf("same id, other request: %v, want ErrConflict", err)
	}
	if _, err := c.CallOutcome(ctx, ""); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("empty id: %v", err)
	}
	if out, err := c.CallOutcome(ctx, "odd/id with space"); err != nil || out.CallID != "odd/id with space" {
		t.Errorf("escaped id: %+v, %v", out, err)
	}
}

// A mutating call keeps running after its client gave up at a deadline (a
// deadline sends no cancel, unlike a cancellation: cancel_test.go), and a
// repeat with the same call id returns its recorded outcome instead of
// running twice.
func TestMutatingOutlivesClient(t *testing.T) {
	dir := t.TempDir()
	url := serve(t, server.Config{Workspace: dir, StateDir: t.TempDir()})
	c := newClient(t, url, remote.Options{})
	req := contracts.ExecRequest{Command: "sleep 0.5; echo ran >> log.txt; echo done", CallID: "call-slow", Timeout: 30 * time.Second}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Exec(short, req); !errors.Is(err, contracts.ErrTimeout) {
		t.Fatalf("first: %v, want ErrTimeout", err)
	}
	res, err := c.Exec(t.Context(), req) // waits for the first run, then replays it
	if err != nil || res.Stdout != "done\n" {
		t.Fatalf("repeat: %+v, %v", res, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "log.txt"))
	if err != nil || string(b) != "ran\n" {
		t.Errorf("log.txt = %q, %v; want one run", b, err)
	}
}

func TestClientFormatHidesToken(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1", remote.Options{})
	for _, s := range []string{c.String(), fmtV(c), fmtV(*c)} {
		if strings.Contains(s, testToken) {
			t.Errorf("formatted client reveals the token: %s", s)
		}
	}
}

func fmtV(v any) string { return fmt.Sprintf("%v %+v %#v %s", v, v, v, v) }
