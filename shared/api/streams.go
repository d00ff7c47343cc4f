package api

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

// StreamRoutes are the routes NewStreams serves: the two event streams,
// each only with Accept: text/event-stream.
var StreamRoutes = []string{
	"GET /v1/sessions/{id}/submissions/{sid}/events",
	"GET /v1/sessions/{id}/events",
}

// NewStreams returns a handler of the event streams alone — a turn's and a
// session's (StreamRoutes), exactly as New serves them — for a process that
// does nothing else: the AWS stream function behind a Lambda function URL
// whose responses stream, where API Gateway would buffer them. It reads
// the session, the submissions and the event log (Config.Journal and
// Config.Events, through the same owner checks: another principal's
// session is a 404) and writes nothing; Config.Engine, Registry,
// Workflow and MCP are not used. Every other request is a 404 JSON error,
// and a stream route asked for anything but text/event-stream a 406 (the
// long-poll and everything else are the API's).
func NewStreams(cfg Config) http.Handler {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &server{Config: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc(StreamRoutes[0], s.auth(s.onlyStreams(s.events)))
	mux.HandleFunc(StreamRoutes[1], s.auth(s.onlyStreams(s.sessionEvents)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { // every method and path: never a 405
		writeError(w, http.StatusNotFound, "not_found", "no such route: this endpoint serves only the event streams (GET /v1/sessions/{id}/submissions/{sid}/events and GET /v1/sessions/{id}/events with Accept: text/event-stream); everything else is the API's")
	})
	s.self = s.recoverer(guard(jsonErrors(mux)))
	return traced(s.self)
}

// onlyStreams refuses a stream route's request that does not ask for an
// event stream: the long-poll and the session's turns as JSON are the
// API's.
func (s *server) onlyStreams(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !wantsSSE(r) {
			s.fail(w, r, fmt.Errorf("this endpoint serves only event streams: send Accept: text/event-stream (and not application/json), or long-poll through the API: %w", contracts.ErrNotAcceptable))
			return
		}
		h(w, r)
	}
}
