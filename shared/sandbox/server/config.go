package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMaxBody       = 16 << 20
	DefaultShutdownGrace = 20 * time.Second
)

// Config configures a Server.
type Config struct {
	// Addr is where Main listens (informational for New and Serve, which
	// are given a listener).
	Addr string
	// Workspace is the directory the sandbox is rooted at (created if
	// missing).
	Workspace string
	// StateDir holds the call ledger (outside the workspace; created if
	// missing). It overrides Sandbox.StateDir when set; with neither there
	// is no ledger: mutating calls are then not effect-once and the calls
	// query answers "unknown".
	StateDir string
	// TokenSHA256 is the hex SHA-256 of the bearer token. Required: the
	// server never sees the token itself, so the ECS API, which shows a
	// task's environment, never reveals a usable one.
	TokenSHA256 string
	// TLSCertPEM and TLSKeyPEM, when given (both or neither), are the
	// sandbox's own certificate and key (placement.NewCert): Serve then
	// speaks only TLS — a plain HTTP request gets the standard library's
	// 400 and reaches no handler — and the client pins the certificate's
	// fingerprint (remote.Options.CertSHA256).
	TLSCertPEM, TLSKeyPEM []byte
	// MaxBody bounds a request body in bytes (default DefaultMaxBody).
	MaxBody int64
	// IdleTimeout: when > 0, Serve returns after no authenticated request
	// arrived (and none ran) for that long. 0 = never.
	IdleTimeout time.Duration
	// ShutdownGrace bounds how long Serve waits for in-flight requests
	// when it stops (default DefaultShutdownGrace); calls still running
	// then are cancelled (their process groups killed).
	ShutdownGrace time.Duration
	// Sandbox configures the wrapped local.Sandbox. Its Env is the base
	// environment of commands: New drops every SANDBOXD_* variable from it
	// and the sandbox scrubs the runtime's secrets (local.Scrub). With a
	// Credential (commands run as another user, EnvRunAs), New gives the
	// workspace tree to that user and keeps StateDir 0700, and every file
	// or directory a WriteFile, EditFile or MakeDir creates is given to it
	// too (local.Own).
	Sandbox local.Options
	// Log receives operational messages (never a token or a header); nil
	// discards them.
	Log *slog.Logger
}

// Server serves one sandbox over HTTP. It is safe for concurrent use.
type Server struct {
	cfg    Config
	api    contracts.SandboxAPI
	sb     *local.Sandbox       // the same sandbox: CancelCall
	ledger contracts.CallLedger // nil when the sandbox keeps no ledger
	token  [sha256.Size]byte    // sha256 of the bearer token
	cert   *tls.Certificate     // nil: plain HTTP
	log    *slog.Logger

	// stop is cancelled when Serve gives up waiting for in-flight calls;
	// mutating calls, which otherwise ignore their client going away,
	// are cancelled by it.
	stop     context.Context
	stopCall context.CancelFunc

	mu       sync.Mutex
	running  int             // authenticated requests running now
	lastSeen time.Time       // start or end of the last authenticated request
	drained  []chan struct{} // closed when running drops to 0
}

// New builds a server around a local.Sandbox rooted at cfg.Workspace.
func New(cfg Config) (*Server, error) {
	if cfg.Workspace == "" {
		return nil, fmt.Errorf("configuring sandboxd: no workspace: %w", contracts.ErrInvalid)
	}
	sum, err := hex.DecodeString(cfg.TokenSHA256)
	if err != nil || len(sum) != sha256.Size {
		return nil, fmt.Errorf("configuring sandboxd: the token hash must be %d hex digits (sha256 of the bearer token): %w", 2*sha256.Size, contracts.ErrInvalid)
	}
	var cert *tls.Certificate
	switch {
	case len(cfg.TLSCertPEM) > 0 && len(cfg.TLSKeyPEM) > 0:
		c, err := tls.X509KeyPair(cfg.TLSCertPEM, cfg.TLSKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("configuring sandboxd: TLS certificate and key: %v: %w", err, contracts.ErrInvalid)
		}
		cert = &c
	case len(cfg.TLSCertPEM) > 0 || len(cfg.TLSKeyPEM) > 0:
		return nil, fmt.Errorf("configuring sandboxd: a TLS certificate needs its key and a key its certificate: %w", contracts.ErrInvalid)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.IdleTimeout < 0 {
		cfg.IdleTimeout = 0
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	opts := cfg.Sandbox
	opts.Env = withoutOwnVars(opts.Env)
	if cfg.StateDir != "" {
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("configuring sandboxd: creating state directory: %w", err)
		}
		if opts.Credential != nil { // commands run as another user: the ledger is sandboxd's alone
			if err := os.Chmod(cfg.StateDir, 0o700); err != nil {
				return nil, fmt.Errorf("configuring sandboxd: %w", err)
			}
		}
		opts.StateDir = cfg.StateDir
	}
	sb, err := local.New(cfg.Workspace, opts)
	if err != nil {
		return nil, fmt.Errorf("configuring sandboxd: %w", err)
	}
	s := &Server{cfg: cfg, api: sb, sb: sb, cert: cert, log: cfg.Log}
	if c := opts.Credential; c != nil {
		o := local.Own(sb)
		if err := local.Reachable(filepath.Dir(cfg.Workspace), c.Uid, c.Gid); err != nil {
			return nil, fmt.Errorf("configuring sandboxd: %w", err)
		}
		if err := o.ChownTree(); err != nil {
			return nil, fmt.Errorf("configuring sandboxd: the workspace must belong to the commands' user: %w", err)
		}
		s.api = o
	}
	copy(s.token[:], sum)
	if l, ok := contracts.SandboxAPI(sb).(contracts.CallLedger); ok {
		s.ledger = l
	}
	s.stop, s.stopCall = context.WithCancel(context.Background())
	s.lastSeen = time.Now()
	return s, nil
}

// withoutOwnVars returns env without SANDBOXD_* variables (local.Scrub
// does not know them: SANDBOXD_TOKEN_SHA256 ends in neither _TOKEN nor
// _SECRET).
func withoutOwnVars(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(strings.ToUpper(kv), "SANDBOXD_") {
			out = append(out, kv)
		}
	}
	return out
}
