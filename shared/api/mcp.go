package api

import (
	"context"
	"net/http"
	"net/http/httptest"
)

// MCPHandler serves one /v1/mcp request (serve.Handler): call performs a
// request of this API as the request's principal.
type MCPHandler func(call func(*http.Request) (*http.Response, error)) http.Handler

// routeMCP serves cairn as an MCP server (POST /v1/mcp, Config.MCP: a
// deployment without it answers 404). Its tools call this API in-process
// as the request's principal: the same authentication, owner checks and
// errors as every route.
func (s *server) routeMCP(rt *router) {
	rt.HandleFunc("POST /v1/mcp", s.auth(func(w http.ResponseWriter, r *http.Request) {
		if s.MCP == nil {
			writeError(w, http.StatusNotFound, "not_found", "the MCP endpoint is not served here")
			return
		}
		s.MCP(s.asCaller(r)).ServeHTTP(w, r)
	}))
}

// asCaller performs API requests in-process with outer's credentials: its
// Authorization header and its context's values (API Gateway's caller on
// AWS), under the inner request's own cancellation.
func (s *server) asCaller(outer *http.Request) func(*http.Request) (*http.Response, error) {
	return func(req *http.Request) (*http.Response, error) {
		req = req.WithContext(valuesOf{Context: req.Context(), values: outer.Context()})
		if a := outer.Header.Get("Authorization"); a != "" {
			req.Header.Set("Authorization", a)
		}
		req.RemoteAddr, req.Host = outer.RemoteAddr, outer.Host
		rec := httptest.NewRecorder()
		s.self.ServeHTTP(rec, req)
		return rec.Result(), nil
	}
}

// valuesOf is a context cancelled as Context is, holding the values of
// values.
type valuesOf struct {
	context.Context
	values context.Context
}

func (v valuesOf) Value(key any) any { return v.values.Value(key) }
