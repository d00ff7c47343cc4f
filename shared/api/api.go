package api

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/turn"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// Config holds what the handlers need.
type Config struct {
	Engine       *turn.Engine
	Journal      contracts.JournalStore
	Transcript   contracts.TranscriptStore
	Events       contracts.EventLog
	Registry     contracts.ToolRegistry
	Wake         func() <-chan struct{} // fires on event appends (may be nil)
	Token        string
	DefaultModel string
	Log          *slog.Logger
	Workflow     WorkflowConfig
}

type server struct{ Config }

// New returns the API handler.
func New(cfg Config) http.Handler {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &server{cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("POST /v1/sessions", s.auth(s.createSession))
	mux.HandleFunc("GET /v1/sessions", s.auth(s.listSessions))
	mux.HandleFunc("GET /v1/sessions/{id}", s.auth(s.getSession))
	mux.HandleFunc("GET /v1/sessions/{id}/transcript", s.auth(s.getTranscript))
	mux.HandleFunc("POST /v1/sessions/{id}/submissions", s.auth(s.submit))
	mux.HandleFunc("GET /v1/sessions/{id}/submissions", s.auth(s.listSubmissions))
	mux.HandleFunc("GET /v1/sessions/{id}/submissions/{sid}", s.auth(s.getSubmission))
	mux.HandleFunc("GET /v1/sessions/{id}/submissions/{sid}/events", s.auth(s.events))
	mux.HandleFunc("GET /v1/sessions/{id}/approvals", s.auth(s.listApprovals))
	mux.HandleFunc("POST /v1/sessions/{id}/approvals/{aid}", s.auth(s.decide))
	s.routeWorkflows(mux)
	return s.recoverer(guard(jsonErrors(mux)))
}

func (s *server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.Token != "" {
			got, ok := bearer(r.Header.Get("Authorization"))
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) != 1 {
				writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token")
				return
			}
		}
		h(w, r)
	}
}

// bearer reads the credentials of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 7235 §2.1).
func bearer(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimLeft(cred, " ")
	return cred, cred != ""
}

// recoverer turns a handler panic into a JSON 500 and a log line; a panic
// never reaches the user as a dropped connection.
func (s *server) recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Log.ErrorContext(r.Context(), "api handler panic", "path", r.URL.Path, "panic", v)
				writeError(w, http.StatusInternalServerError, "internal", "internal error")
			}
		}()
		h.ServeHTTP(w, r)
	})
}

func (s *server) ctx(r *http.Request) context.Context { return r.Context() }
