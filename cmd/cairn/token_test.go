package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func tokenMode(t *testing.T, data string) (string, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(data, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Fatalf("DATA/token is %v, want a regular file", fi.Mode())
	}
	b, err := os.ReadFile(filepath.Join(data, "token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b)), fi.Mode().Perm()
}

func TestTokenFileKeptPrivateAndNeverThroughASymlink(t *testing.T) {
	data := t.TempDir()
	path := filepath.Join(data, "token")

	tok, fresh, err := serverToken(data, "")
	if err != nil || !fresh || !validToken(tok) {
		t.Fatalf("first start: %q fresh=%v %v", tok, fresh, err)
	}
	if err := writeTokenFile(data, tok); err != nil {
		t.Fatal(err)
	}
	if got, mode := tokenMode(t, data); got != tok || mode != 0o600 {
		t.Fatalf("token file %q mode %v, want %q 0600", got, mode, tok)
	}
	if again, fresh, _ := serverToken(data, ""); again != tok || fresh {
		t.Fatalf("restart: token %q fresh=%v, want the same %q", again, fresh, tok)
	}

	// Readable by others: not trusted (it may have been read), replaced 0600.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if again, fresh, _ := serverToken(data, ""); again == tok || !fresh {
		t.Fatalf("a 0644 token file was reused: %q", again)
	}

	// A symlink planted as DATA/token: never read, never written through.
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("attacker-known\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	tok2, fresh, _ := serverToken(data, "")
	if tok2 == "attacker-known" || !fresh {
		t.Fatalf("token read through a symlink: %q", tok2)
	}
	if err := writeTokenFile(data, tok2); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "attacker-known\n" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	if got, mode := tokenMode(t, data); got != tok2 || mode != 0o600 {
		t.Fatalf("after a symlink: %q %v", got, mode)
	}

	// A FIFO does not hang the start; a given token wins and is written.
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, fresh, _ := serverToken(data, ""); !fresh {
		t.Fatal("a FIFO was read as a token")
	}
	if got, _, err := serverToken(data, "given-token"); err != nil || got != "given-token" {
		t.Fatalf("--token: %q %v", got, err)
	}
	if err := writeTokenFile(data, "given-token"); err != nil {
		t.Fatal(err)
	}
	if got, mode := tokenMode(t, data); got != "given-token" || mode != 0o600 {
		t.Fatalf("given token file %q %v", got, mode)
	}
	if _, _, err := serverToken(data, "two words"); err == nil {
		t.Fatal("a token with a space was accepted")
	}
	if left, _ := filepath.Glob(filepath.Join(data, ".token-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// startDevToken runs `cairn dev` without --token and returns its address
// and the token it printed.
func startDevToken(t *testing.T, data string) (string, string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(cairnBin, "dev", "--data", data, "--addr", "127.0.0.1:0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	var addr string
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "cairn dev listening on http://"); ok {
			addr = a
		}
		if tok, ok := strings.CutPrefix(sc.Text(), "token "); ok {
			tok, _, _ = strings.Cut(tok, " ")
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return addr, tok, cmd
		}
	}
	t.Fatal("cairn dev exited before printing its token")
	return "", "", nil
}

func stop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
}

func TestDevKeepsItsTokenAcrossRestartsAndCutsStalledClients(t *testing.T) {
	data := t.TempDir()
	addr, tok, cmd := startDevToken(t, data)
	if got, mode := tokenMode(t, data); got != tok || mode != 0o600 {
		t.Fatalf("token file %q %v, printed %q", got, mode, tok)
	}

	// Lowercase "bearer" is the same scheme (RFC 7235).
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/sessions", nil)
	req.Header.Set("Authorization", "bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("lowercase bearer: %d", resp.StatusCode)
	}

	// A client that never finishes its headers is cut off.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /v1/sessions HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(readHeaderTimeout + 10*time.Second))
	_, _ = io.Copy(io.Discard, conn)
	if waited := time.Since(start); waited > readHeaderTimeout+5*time.Second {
		t.Fatalf("a stalled request stayed open %v", waited)
	}
	srv := newServer(http.NotFoundHandler())
	if srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 || srv.WriteTimeout <= 25*time.Second+srv.ReadTimeout {
		t.Fatalf("server timeouts: read %v idle %v write %v (must exceed the read and the 25 s long-poll)", srv.ReadTimeout, srv.IdleTimeout, srv.WriteTimeout)
	}

	stop(t, cmd)
	_, again, cmd := startDevToken(t, data)
	if again != tok {
		t.Fatalf("restart without --token printed %q, want the kept %q", again, tok)
	}
	stop(t, cmd)
}
