package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
)

// Handler returns the HTTP handler of the protocol (the Server itself).
func (s *Server) Handler() http.Handler { return s }

// ServeHTTP routes one request: the protocol version is checked first,
// health needs no token, every other route needs the bearer token before
// anything else happens.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if v := r.Header.Get(proto.HeaderProtocol); v != "" && v != proto.VersionHeader {
		writeError(w, http.StatusBadRequest, proto.CodeInvalid,
			fmt.Sprintf("unsupported protocol version %q (this server speaks %d)", v, proto.Version))
		return
	}
	if r.URL.Path == proto.PathHealth {
		if !allow(w, r, http.MethodGet) {
			return
		}
		writeJSON(w, proto.Health{OK: true, Protocol: proto.Version})
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxd"`)
		writeError(w, http.StatusUnauthorized, proto.CodeUnauthorized, "missing or wrong bearer token")
		return
	}

	s.begin()
	defer s.end()
	sw, r, endSpan := serverSpan(w, r)
	w = sw
	defer endSpan()
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.ErrorContext(r.Context(), "sandboxd: handler panicked", "path", r.URL.Path, "panic", fmt.Sprint(p))
			writeError(w, http.StatusInternalServerError, proto.CodeInternal, "internal error")
		}
	}()

	if escaped, ok := strings.CutPrefix(r.URL.EscapedPath(), proto.PathCallsPrefix); ok {
		if allow(w, r, http.MethodGet) {
			s.callOutcome(w, r, escaped)
		}
		return
	}
	if r.URL.Path == proto.PathCancel {
		if allow(w, r, http.MethodPost) {
			s.cancel(w, r)
		}
		return
	}
	switch r.URL.Path {
	case proto.PathWorkspaceExport:
		if allow(w, r, http.MethodPost) {
			s.export(w, r)
		}
		return
	case proto.PathWorkspaceImport:
		if allow(w, r, http.MethodPost) {
			s.importWorkspace(w, r)
		}
		return
	}
	method, ok := proto.MethodOf(r.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, proto.CodeNotFound, "no such route: "+r.URL.Path)
		return
	}
	if allow(w, r, http.MethodPost) {
		s.call(w, r, method)
	}
}

// authorized compares the SHA-256 of the presented bearer token with the
// configured hash in constant time.
func (s *Server) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get(proto.HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], s.token[:]) == 1
}

// begin and end track activity for the idle timeout and in-flight
// requests for shutdown.
func (s *Server) begin() {
	s.mu.Lock()
	s.running++
	s.lastSeen = time.Now()
	s.mu.Unlock()
}

func (s *Server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	s.lastSeen = time.Now()
	if s.running == 0 {
		for _, ch := range s.drained {
			close(ch)
		}
		s.drained = nil
	}
}

// callOutcome answers the effect-once query from the sandbox's ledger, or
// "unknown" when it keeps none.
func (s *Server) callOutcome(w http.ResponseWriter, r *http.Request, escaped string) {
	id, err := url.PathUnescape(escaped)
	if err != nil || id == "" || strings.Contains(escaped, "/") {
		writeError(w, http.StatusBadRequest, proto.CodeInvalid, "a call id is one non-empty, escaped path segment")
		return
	}
	out := contracts.CallOutcome{CallID: id, State: contracts.CallUnknown}
	if s.ledger != nil {
		if out, err = s.ledger.CallOutcome(r.Context(), id); err != nil {
			s.fail(w, r, "calls", err)
			return
		}
	}
	writeJSON(w, out)
}

// decode reads the JSON body of r (bounded by MaxBody) into v.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(raw(w), r.Body, s.cfg.MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("data after the JSON object")
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("request body exceeds %d bytes: %w", s.cfg.MaxBody, contracts.ErrTooLarge)
		}
		return fmt.Errorf("decoding the request body: %v: %w", err, contracts.ErrInvalid)
	}
	return nil
}

// fail writes err as a protocol error; internal errors are logged.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, method string, err error) {
	code, status := proto.Code(err)
	spanFailed(r, code)
	if status >= 500 && code != proto.CodeTimeout {
		s.log.ErrorContext(r.Context(), "sandboxd: call failed", "method", method, "error", err)
	}
	writeError(w, status, code, err.Error())
}

// allow answers 405 unless r uses method.
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeError(w, http.StatusMethodNotAllowed, proto.CodeInvalid, fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, method))
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, proto.CodeInternal, "encoding the result: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(proto.ErrorBody{Error: proto.ErrorDetail{Code: code, Message: message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
