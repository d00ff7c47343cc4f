package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

const testToken = "tok-8d1e6f0a2c4b9e73"

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// start serves a sandboxd handler on httptest (token testToken) and returns
// its URL.
func start(t *testing.T, cfg server.Config) string {
	t.Helper()
	cfg.TokenSHA256 = tokenHash(testToken)
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func client(t *testing.T, url string) *remote.Client {
	t.Helper()
	c, err := remote.New(url, testToken, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer is a raw HTTP answer.
type answer struct {
	status int
	body   string
	err    proto.ErrorDetail
}

// send makes one raw request; headers are name, value pairs.
func send(t *testing.T, method, url string, body []byte, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, body: string(b)}
	if resp.StatusCode != http.StatusOK {
		var eb proto.ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a protocol error: %q", method, url, resp.StatusCode, b)
		}
		a.err = eb.Error
	}
	return a
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
