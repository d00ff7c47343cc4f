package remote_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

const testToken = "tok-3f9c2a7e5b1d4c6a8e0f"

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// serve runs a sandboxd server on a loopback listener until the test ends
// and returns its base URL. The token is testToken.
func serve(t testing.TB, cfg server.Config) string {
	t.Helper()
	cfg.TokenSHA256 = tokenHash(testToken)
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func newClient(t testing.TB, endpoint string, opts remote.Options) *remote.Client {
	t.Helper()
	c, err := remote.New(endpoint, testToken, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
