package main

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cairn console --token-file sends the file's token as the bearer of what
// it forwards (a JWT is longer than a local token), and refuses a file
// that holds none, or both flags at once.
func TestConsoleTokenFile(t *testing.T) {
	jwt := "eyJ" + strings.Repeat("a", 1500) + ".sig"
	var mu sync.Mutex
	var auth []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte("console page"))
	}))
	defer api.Close()
	dir := t.TempDir()
	good, empty := filepath.Join(dir, "jwt"), filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte(jwt+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--token-file", empty}, "holds no token"},
		{[]string{"--token-file", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"--token-file", good, "--token", "x"}, "not both"},
	} {
		out, code := cairn(t, append([]string{"console", "--api", api.URL}, c.args...)...)
		if code == 0 || !strings.Contains(out, c.want) {
			t.Errorf("cairn console %v: exit %d, %q; want a failure saying %q", c.args, code, out, c.want)
		}
	}

	_, link := launch(t, dir, nil, "console ", "", "console", "--api", api.URL, "--token-file", good)
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(link) // the key becomes a cookie, then /console/
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != http.StatusOK || len(auth) == 0 || auth[len(auth)-1] != "Bearer "+jwt {
		t.Fatalf("status %d, upstream saw Authorization %q; want the file's token as the bearer", resp.StatusCode, auth)
	}
}
