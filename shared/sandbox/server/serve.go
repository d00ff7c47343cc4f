package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// callDrain bounds how long Serve waits, after cancelling the calls still
// running at the end of the grace period, for them to return (their
// process groups are killed on cancellation, which is quick).
const callDrain = 5 * time.Second

// Serve serves the protocol on ln until ctx ends or, when IdleTimeout > 0,
// no authenticated request arrived or ran for that long; either way it
// returns nil after a graceful shutdown: it stops accepting, lets in-flight
// requests finish within ShutdownGrace, then cancels the calls still
// running (killing their commands) and waits for them briefly. A failure of
// the listener is returned. Serve closes ln. Call it once. With a TLS
// certificate (Config.TLSCertPEM) it serves only TLS 1.3 on ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	if s.cert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*s.cert}, MinVersion: tls.VersionTLS13}
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- srv.Serve(ln) }()
	}

	var idle <-chan time.Time // nil: never idle
	if s.cfg.IdleTimeout > 0 {
		t := time.NewTimer(s.cfg.IdleTimeout)
		defer t.Stop()
		idle = t.C
		for {
			select {
			case err := <-served:
				return err
			case <-ctx.Done():
				return s.shutdown(srv, served)
			case <-idle:
				wait := s.idleLeft()
				if wait <= 0 {
					s.log.InfoContext(ctx, "sandboxd: stopping after the idle timeout", "idle_timeout", s.cfg.IdleTimeout.String())
					return s.shutdown(srv, served)
				}
				t.Reset(wait)
			}
		}
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		return s.shutdown(srv, served)
	}
}

// idleLeft is how much longer the server must stay up before it counts as
// idle: a full IdleTimeout while a request runs, else what remains since
// the last one started or ended.
func (s *Server) idleLeft() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running > 0 {
		return s.cfg.IdleTimeout
	}
	return s.cfg.IdleTimeout - time.Since(s.lastSeen)
}

// shutdown stops srv gracefully within ShutdownGrace, then cancels what
// still runs and waits for it briefly.
func (s *Server) shutdown(srv *http.Server, served <-chan error) error {
	grace, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	defer s.sb.CloseMCP() // its stdio MCP servers end with it
	if err := srv.Shutdown(grace); err != nil {
		s.log.WarnContext(grace, "sandboxd: requests still running after the shutdown grace period; cancelling them", "grace", s.cfg.ShutdownGrace.String())
		s.stopCall()
		_ = srv.Close()
		s.waitCalls(callDrain)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// waitCalls waits up to d for in-flight handlers to return.
func (s *Server) waitCalls(d time.Duration) {
	s.mu.Lock()
	if s.running == 0 {
		s.mu.Unlock()
		return
	}
	done := make(chan struct{})
	s.drained = append(s.drained, done)
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
