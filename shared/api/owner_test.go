package api_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/auth"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/testkit/ownertest"
)

// Every route, over HTTP, with local token principals: alice (A), bob (B)
// and ops (an operator) from a token file, as `cairn dev` serves them.
func TestEveryRouteChecksItsOwner(t *testing.T) {
	tokens := auth.Open(t.TempDir())
	names := map[ownertest.Caller]string{ownertest.A: "alice", ownertest.B: "bob", ownertest.Operator: "ops"}
	toks := map[ownertest.Caller]string{}
	for c, name := range names {
		tok, err := tokens.Add(name, c == ownertest.Operator)
		if err != nil {
			t.Fatal(err)
		}
		toks[c] = tok
	}
	h := enginetest.NewConfig(t, assemble.Config{Authenticate: tokens.Request}, enginetest.Workflows(&enginetest.InProcess{}, nil))
	srv := httptest.NewServer(h.RT.API)
	t.Cleanup(srv.Close)
	ownertest.Run(t, ownertest.Target{
		H:    h,
		Name: func(c ownertest.Caller) string { return names[c] },
		Do: func(t *testing.T, c ownertest.Caller, method, path string, body []byte) (int, []byte) {
			t.Helper()
			req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream") // /v1/mcp's Streamable HTTP wants both
			if tok := toks[c]; tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, raw
		},
	})
}
