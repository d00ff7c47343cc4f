package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/telemetry"
	"github.com/cairnrun/cairn/shared/turn"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// Config holds what the handlers need.
type Config struct {
	Engine     *turn.Engine
	Journal    contracts.JournalStore
	Transcript contracts.TranscriptStore
	Events     contracts.EventLog
	Registry   contracts.ToolRegistry
	Wake       func() <-chan struct{} // fires on event appends (may be nil)
	// WakeFor waits for the next append to one submission's events: the
	// channel it closes and the function that ends the wait (may be nil:
	// Wake then).
	WakeFor func(submissionID string) (<-chan struct{}, func())
	// Authenticate finds who makes a request (a bearer token's principal
	// locally, the API Gateway authorizer's caller on AWS). An error
	// wrapping ErrPermission is a 401; nil Authenticate refuses every
	// request.
	Authenticate func(*http.Request) (contracts.Principal, error)
	DefaultModel string
	Log          *slog.Logger
	Workflow     WorkflowConfig
	// MCP serves POST /v1/mcp, cairn as an MCP server (serve.Handler);
	// nil = not served (404).
	MCP MCPHandler
	// Console builds what is served under ConsolePrefix (shared/console)
	// from the API's own handler, which it calls in process for everything
	// it shows and does; nil = not served. A field rather than an import:
	// the stream function serves the API's streams without the console.
	Console func(api http.Handler) http.Handler
}

// ConsoleFunc builds the console (console.Mount) over the API's own
// handler, with the process's log and clock.
type ConsoleFunc func(api http.Handler, log *slog.Logger, now func() time.Time) http.Handler

// ConsolePrefix is where Config.Console is served.
const ConsolePrefix = "/console/"

type server struct {
	Config
	self http.Handler // the whole handler: /v1/mcp's tools call it in-process
}

// New returns the API handler.
func New(cfg Config) http.Handler {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &server{Config: cfg}
	s.self = s.recoverer(guard(jsonErrors(s.routes().mux)))
	// The console is beside the JSON routes, not among them (Routes does
	// not list it): it holds no data and calls s.self in process for
	// everything it shows and does, with the request's credentials.
	top := http.NewServeMux()
	if cfg.Console != nil {
		top.Handle(ConsolePrefix, cfg.Console(s.self))
	}
	top.Handle("/", s.self)
	return traced(top)
}

// router is the mux every authenticated route is registered on; it keeps
// their patterns, so Routes lists them all (a route added anywhere in the
// package shows up in the owner-check test of every route).
type router struct {
	mux      *http.ServeMux
	patterns []string
}

// HandleFunc registers h for pattern, as http.ServeMux.HandleFunc does.
func (rt *router) HandleFunc(pattern string, h http.HandlerFunc) {
	rt.patterns = append(rt.patterns, pattern)
	rt.mux.HandleFunc(pattern, h)
}

// routes registers every route: GET /healthz, the only one without
// authentication, on the mux itself; the rest through the router.
func (s *server) routes() *router {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	rt := &router{mux: mux}
	rt.HandleFunc("POST /v1/sessions", s.auth(s.createSession))
	rt.HandleFunc("GET /v1/sessions", s.auth(s.listSessions))
	rt.HandleFunc("GET /v1/sessions/{id}", s.auth(s.getSession))
	rt.HandleFunc("GET /v1/sessions/{id}/transcript", s.auth(s.getTranscript))
	rt.HandleFunc("POST /v1/sessions/{id}/submissions", s.auth(s.submit))
	rt.HandleFunc("GET /v1/sessions/{id}/submissions", s.auth(s.listSubmissions))
	rt.HandleFunc("GET /v1/sessions/{id}/submissions/{sid}", s.auth(s.getSubmission))
	rt.HandleFunc("GET /v1/sessions/{id}/submissions/{sid}/events", s.auth(s.events))
	rt.HandleFunc("GET /v1/sessions/{id}/events", s.auth(s.sessionEvents))
	rt.HandleFunc("GET /v1/sessions/{id}/approvals", s.auth(s.listApprovals))
	rt.HandleFunc("POST /v1/sessions/{id}/approvals/{aid}", s.auth(s.decide))
	rt.HandleFunc("GET /v1/usage", s.auth(s.usage))
	rt.HandleFunc("GET /v1/principal", s.auth(s.whoami))
	s.routeWorkflows(rt)
	s.routeControl(rt)
	s.routeMCP(rt)
	return rt
}

// Routes returns the pattern of every authenticated route ("GET
// /v1/sessions/{id}", …) in the order New registers them.
func Routes() []string { return (&server{}).routes().patterns }

// auth is the one place a route is authenticated: Config.Authenticate
// finds the request's principal, which the handler then finds in the
// request's context (contracts.PrincipalFrom; the engine reads it there
// too, e.g. for who decided an approval). No principal is a 401 JSON
// error.
func (s *server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.Authenticate == nil {
			writeError(w, http.StatusUnauthorized, "unauthorized", "this server authenticates no one")
			return
		}
		p, err := s.Authenticate(r)
		switch {
		case errors.Is(err, contracts.ErrPermission):
			writeError(w, http.StatusUnauthorized, "unauthorized", err.Error())
			return
		case err != nil:
			s.Log.ErrorContext(r.Context(), "authenticating a request failed", "path", r.URL.Path, "error", err)
			writeError(w, http.StatusInternalServerError, "internal", "internal error")
			return
		case p.Name == "":
			writeError(w, http.StatusUnauthorized, "unauthorized", "the credentials name no principal")
			return
		}
		h(w, r.WithContext(contracts.WithPrincipal(r.Context(), p)))
	}
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

// traced continues the caller's trace (its traceparent header): a turn
// accepted by the request is a child of the caller's span.
func traced(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Traceparent") != "" {
			r = r.WithContext(telemetry.FromHTTP(r.Context(), r.Header))
		}
		h.ServeHTTP(w, r)
	})
}
