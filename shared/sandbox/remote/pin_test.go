package remote_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/testkit/conformance/sandboxtest"
)

// wire records the raw bytes every connection accepted by a listener
// carried towards the server (below TLS, so what an observer of the
// network would see).
type wire struct {
	net.Listener
	mu    sync.Mutex
	conns []*bytes.Buffer
}

type wireConn struct {
	net.Conn
	w   *wire
	buf *bytes.Buffer
}

func (w *wire) Accept() (net.Conn, error) {
	c, err := w.Listener.Accept()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b := &bytes.Buffer{}
	w.conns = append(w.conns, b)
	return &wireConn{Conn: c, w: w, buf: b}, nil
}

func (c *wireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.mu.Lock()
	c.buf.Write(p[:n])
	c.w.mu.Unlock()
	return n, err
}

// seen returns a copy of every connection's bytes so far.
func (w *wire) seen() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([][]byte, len(w.conns))
	for i, b := range w.conns {
		out[i] = bytes.Clone(b.Bytes())
	}
	return out
}

// serveTLS runs sandboxd with a fresh certificate on a recorded loopback
// listener until the test ends; it returns the https URL, the certificate
// and the recorder.
func serveTLS(t testing.TB, cfg server.Config) (string, placement.Cert, *wire) {
	t.Helper()
	cert, err := placement.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	cfg.TokenSHA256 = tokenHash(testToken)
	cfg.TLSCertPEM, cfg.TLSKeyPEM = []byte(cert.CertPEM), []byte(cert.KeyPEM)
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 200 * time.Millisecond
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, w) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "https://" + ln.Addr().String(), cert, w
}

// The remote client passes the sandbox suite over pinned TLS too.
func TestConformanceTLS(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) (contracts.SandboxAPI, string) {
		dir := t.TempDir()
		url, cert, _ := serveTLS(t, server.Config{Workspace: dir, StateDir: t.TempDir(), Sandbox: local.Options{Env: os.Environ()}})
		return newClient(t, url, remote.Options{CertSHA256: cert.SHA256}), dir
	})
}

// The right pin works, and only TLS crosses the wire: no connection
// carries the token or a request line in clear.
func TestPinnedTLS(t *testing.T) {
	dir := t.TempDir()
	url, cert, w := serveTLS(t, server.Config{Workspace: dir, StateDir: t.TempDir()})
	c := newClient(t, url, remote.Options{CertSHA256: cert.SHA256})
	if err := c.Health(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFile(t.Context(), contracts.WriteFileRequest{Path: "a.txt", Content: "over tls", CallID: "call-1"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dir + "/a.txt"); err != nil || string(b) != "over tls" {
		t.Fatalf("workspace a.txt %q, %v", b, err)
	}
	conns := w.seen()
	if len(conns) == 0 {
		t.Fatal("the server accepted no connection")
	}
	for i, b := range conns {
		if len(b) == 0 || b[0] != 0x16 { // a TLS handshake record opens every connection
			t.Errorf("connection %d opened with %q, not a TLS handshake", i, b[:min(len(b), 16)])
		}
		for _, clear := range []string{testToken, "Bearer", "over tls", "POST /"} {
			if bytes.Contains(b, []byte(clear)) {
				t.Errorf("connection %d carried %q in clear", i, clear)
			}
		}
	}
}

// A server presenting another certificate — another sandbox, or whoever
// now holds the address — gets nothing: the call is ErrUnavailable (and
// ErrCertMismatch), made over one connection only (never retried, neither
// over TLS nor in clear), which carried no token and no request, and the
// call had no effect.
func TestWrongPinIsUnavailableAndSendsNothing(t *testing.T) {
	dir := t.TempDir()
	url, _, w := serveTLS(t, server.Config{Workspace: dir, StateDir: t.TempDir()})
	other, err := placement.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, url, remote.Options{CertSHA256: other.SHA256, Retries: 3})
	if err := c.Health(t.Context()); !errors.Is(err, contracts.ErrUnavailable) || !errors.Is(err, remote.ErrCertMismatch) {
		t.Fatalf("health with the wrong pin: %v, want ErrUnavailable and ErrCertMismatch", err)
	}
	if n := len(w.seen()); n != 1 {
		t.Errorf("health (retried like a read) made %d connections, want 1: a pin mismatch is never retried", n)
	}
	err = c.WriteFile(t.Context(), contracts.WriteFileRequest{Path: "b.txt", Content: "must not arrive", CallID: "call-2"})
	if !errors.Is(err, contracts.ErrUnavailable) || !errors.Is(err, remote.ErrCertMismatch) {
		t.Fatalf("write with the wrong pin: %v", err)
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("error names the token: %v", err)
	}
	if _, err := os.Stat(dir + "/b.txt"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the write reached the sandbox: %v", err)
	}
	conns := w.seen()
	if len(conns) != 2 {
		t.Errorf("%d connections for two calls, want 2", len(conns))
	}
	for i, b := range conns {
		if len(b) == 0 || b[0] != 0x16 {
			t.Errorf("connection %d opened with %q, not a TLS handshake", i, b[:min(len(b), 16)])
		}
		for _, clear := range []string{testToken, "Bearer", "must not arrive", "HTTP/1.1"} {
			if bytes.Contains(b, []byte(clear)) {
				t.Errorf("connection %d carried %q in clear", i, clear)
			}
		}
	}
}

// A pin needs https; a malformed pin is refused; without a pin the client
// speaks plain HTTP (a record with no CertSHA256), which a TLS sandboxd
// does not serve.
func TestPinOptions(t *testing.T) {
	good := strings.Repeat("ab", 32)
	for name, tc := range map[string]struct{ endpoint, pin string }{
		"pin over http": {"http://127.0.0.1:7070", good},
		"short pin":     {"https://127.0.0.1:7070", "abcd"},
		"not hex":       {"https://127.0.0.1:7070", strings.Repeat("zz", 32)},
	} {
		if _, err := remote.New(tc.endpoint, testToken, remote.Options{CertSHA256: tc.pin}); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := remote.New("https://127.0.0.1:7070", testToken, remote.Options{CertSHA256: good,
		HTTPClient: &http.Client{Transport: roundTripperFunc(nil)}}); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("pin with a transport that cannot be pinned: %v, want ErrInvalid", err)
	}

	// Plain HTTP without a pin, as before.
	plain := newClient(t, serve(t, server.Config{Workspace: t.TempDir()}), remote.Options{})
	if err := plain.Health(t.Context()); err != nil {
		t.Fatalf("plain HTTP: %v", err)
	}
	// A TLS sandboxd does not answer plain HTTP.
	url, _, _ := serveTLS(t, server.Config{Workspace: t.TempDir()})
	clear := newClient(t, "http://"+strings.TrimPrefix(url, "https://"), remote.Options{Retries: -1})
	if err := clear.Health(t.Context()); !errors.Is(err, contracts.ErrUnavailable) {
		t.Fatalf("plain HTTP to a TLS sandboxd: %v, want ErrUnavailable", err)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
