package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

// Given a certificate and its key (SANDBOXD_TLS_CERT/KEY, as the Fargate
// provider passes them), sandboxd announces https and serves only TLS: a
// client pinning that certificate works, a plain HTTP request carrying the
// right token is refused before any handler (the file it asks for is not
// written), and commands see neither variable nor the key.
func TestMainServesOnlyTLS(t *testing.T) {
	cert, err := placement.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := reachableDir(t)
	environ := []string{
		"PATH=" + os.Getenv("PATH"), "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken),
		server.EnvTLSCert + "=" + cert.CertPEM, server.EnvTLSKey + "=" + cert.KeyPEM,
	}
	url, code := runMain(t, ctx, []string{"--addr", "127.0.0.1:0", "--workspace", dir, "--state", filepath.Join(t.TempDir(), "state")}, environ)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("announced %q, want https", url)
	}
	c, err := remote.New(url, testToken, remote.Options{CertSHA256: cert.SHA256})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Exec(t.Context(), contracts.ExecRequest{Command: "env"})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"SANDBOXD_", "PRIVATE KEY", "CERTIFICATE"} {
		if strings.Contains(res.Stdout, bad) {
			t.Errorf("command sees %q:\n%s", bad, res.Stdout)
		}
	}

	// The same address in clear, with the right token: refused.
	plain := "http://" + strings.TrimPrefix(url, "https://")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, plain+proto.Path("write_file"),
		strings.NewReader(`{"path":"clear.txt","content":"sent in clear"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(proto.HeaderAuthorization, "Bearer "+testToken)
	req.Header.Set(proto.HeaderProtocol, proto.VersionHeader)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTPS") {
		t.Errorf("plain HTTP answered %d %q, want the 400 of an HTTPS server", resp.StatusCode, body)
	}
	if _, err := c.Stat(t.Context(), "clear.txt"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("the plain request was served: stat clear.txt: %v", err)
	}

	// A client without the pin (plain HTTP) cannot use it either.
	if err := client(t, plain).Health(t.Context()); !errors.Is(err, contracts.ErrUnavailable) {
		t.Errorf("plain client's health: %v, want ErrUnavailable", err)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit %d after ctx end, want 0", got)
	}
}

func TestMainRefusesHalfATLSIdentity(t *testing.T) {
	cert, err := placement.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	other, err := placement.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	hash := "SANDBOXD_TOKEN_SHA256=" + tokenHash(testToken)
	args := []string{"--addr", "127.0.0.1:0", "--workspace", reachableDir(t), "--state", t.TempDir()}
	for name, env := range map[string][]string{
		"certificate without key": {hash, server.EnvTLSCert + "=" + cert.CertPEM},
		"key without certificate": {hash, server.EnvTLSKey + "=" + cert.KeyPEM},
		"not PEM":                 {hash, server.EnvTLSCert + "=nonsense", server.EnvTLSKey + "=nonsense"},
		"key of another cert":     {hash, server.EnvTLSCert + "=" + cert.CertPEM, server.EnvTLSKey + "=" + other.KeyPEM},
	} {
		var out, errOut strings.Builder
		if got := server.Main(t.Context(), args, env, &out, &errOut); got != 2 || out.Len() != 0 || errOut.Len() == 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2, nothing, a message", name, got, out.String(), errOut.String())
		}
	}
}

// The server and the providers name the variables alike.
func TestTLSVariablesMatchPlacement(t *testing.T) {
	if server.EnvTLSCert != placement.EnvTLSCert || server.EnvTLSKey != placement.EnvTLSKey {
		t.Fatalf("server %s/%s, placement %s/%s", server.EnvTLSCert, server.EnvTLSKey, placement.EnvTLSCert, placement.EnvTLSKey)
	}
}
