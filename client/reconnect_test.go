package client_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/client"
)

// Reconnecting: a rejected token is re-read from the token file; 503s are
// waited out; a server that never comes back is given up on within the
// bound, in one line; an error reconnecting cannot heal is returned at once.
func TestReconnecting(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	busy := 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Header.Get("Authorization") != "Bearer new":
			http.Error(w, `{"error":{"code":"unauthorized","message":"bad token"}}`, http.StatusUnauthorized)
		case busy > 0:
			busy--
			http.Error(w, `{"error":{"code":"unavailable","message":"starting"}}`, http.StatusServiceUnavailable)
		case r.URL.Path == "/v1/sessions/nope":
			http.Error(w, `{"error":{"code":"not_found","message":"no such session"}}`, http.StatusNotFound)
		default:
			fmt.Fprint(w, `{"id":"ses_1"}`)
		}
	}))
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(srv.URL, client.WithBearer("old"), client.WithTokenFile(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var sess client.Session
	err = cl.Reconnecting(ctx, &buf, func() string { return ", resuming" }, func() (err error) {
		sess, err = cl.Session(ctx, "ses_1")
		return err
	})
	if err != nil || sess.ID != "ses_1" {
		t.Fatalf("session %+v, %v:\n%s", sess, err, buf.String())
	}
	if got := buf.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "token rejected") || !strings.HasSuffix(got, ", resuming\n") {
		t.Fatalf("want one line:\n%s", got)
	}

	buf.Reset()
	if err := cl.Reconnecting(ctx, &buf, nil, func() error { _, err := cl.Session(ctx, "nope"); return err }); err == nil || buf.Len() != 0 {
		t.Fatalf("a 404 was retried: %v %q", err, buf.String())
	}

	// Without a token file a 401 is final.
	plain, _ := client.New(srv.URL, client.WithBearer("old"))
	if err := plain.Reconnecting(ctx, &buf, nil, func() error { _, err := plain.Session(ctx, "ses_1"); return err }); err == nil || buf.Len() != 0 {
		t.Fatalf("a 401 without a token file was retried: %v %q", err, buf.String())
	}

	srv.Close()
	buf.Reset()
	short, _ := client.New(srv.URL, client.WithTokenFile(tokenFile), client.WithReconnectFor(300*time.Millisecond))
	err = short.Reconnecting(ctx, &buf, nil, func() error { _, err := short.Session(ctx, "ses_1"); return err })
	if err == nil || !strings.Contains(err.Error(), "did not come back") {
		t.Fatalf("err = %v", err)
	}
	if got := buf.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "connection refused") || !strings.Contains(got, "gave up after") {
		t.Fatalf("want one line:\n%s", got)
	}
}

// ReadToken reads DATA/token as `cairn dev` writes it, and refuses what is
// no token.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    string
	}{
		{"tok-123\n", "tok-123"},
		{"  tok \r\n", "tok"},
		{"", ""},
		{"two words\n", ""},
		{strings.Repeat("x", client.MaxTokenBytes+1), ""},
	} {
		if err := os.WriteFile(client.TokenPath(dir), []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := client.ReadToken(client.TokenPath(dir))
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("ReadToken of %q = %q, %v; want %q", tc.content, got, err, tc.want)
		}
	}
	if _, err := client.ReadToken(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file was read")
	}
}
