package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/dumpable"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// EnvTokenSHA256 names the environment variable holding the hex SHA-256 of
// the bearer token. Every SANDBOXD_* variable is withheld from sandboxed
// commands.
const EnvTokenSHA256 = "SANDBOXD_TOKEN_SHA256"

// EnvIdleTimeout, when set, is the default of --idle-timeout (the Fargate
// provider sets it per task).
const EnvIdleTimeout = "SANDBOXD_IDLE_TIMEOUT"

// EnvTLSCert and EnvTLSKey, when both set, hold the sandbox's own TLS
// certificate and key (PEM; placement.NewCert, the Fargate provider sets
// them per task): sandboxd then serves only TLS. One without the other is
// refused (exit 2). Like every SANDBOXD_* variable they never reach a
// command: commands get only local.Allow's variables, and New drops
// SANDBOXD_* from whatever it is given.
const (
	EnvTLSCert = "SANDBOXD_TLS_CERT"
	EnvTLSKey  = "SANDBOXD_TLS_KEY"
)

// DefaultAddr is where Main listens without --addr: loopback only.
const DefaultAddr = "127.0.0.1:7070"

// Main is the whole sandboxd command; functions/sandboxd calls it with the
// process's arguments (without the program name), environment and streams,
// and a ctx that ends on SIGTERM/SIGINT. It binds exactly --addr, prints
// one line "sandboxd listening on http://HOST:PORT" (https:// with
// SANDBOXD_TLS_CERT and SANDBOXD_TLS_KEY) to stdout once listening (with
// port 0 it names the port chosen), and serves until ctx
// ends or --idle-timeout passes without a request. Commands get only the
// allowlisted part of environ (local.Allow: PATH, locale, TERM, TZ, TMPDIR,
// USER, LOGNAME, SHELL), never DATABASE_URL, a webhook URL or any other
// variable of whoever started sandboxd, and that is scrubbed again by the
// sandbox. First of all Main switches the process's dumpable flag off
// (shared/dumpable), so a command of the same user cannot read sandboxd's
// environment or memory through /proc.
//
// Every command runs under the limits of SANDBOXD_LIMITS (limits.go).
// With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// set, every authorized request is a span exported over OTLP/HTTP
// (trace.go), flushed when Main returns; a bad OTEL_* setting is exit 2.
//
// It returns the exit status: 0 after a clean stop, 2 for bad flags, a
// missing or malformed SANDBOXD_TOKEN_SHA256, a bad SANDBOXD_RUN_AS or
// SANDBOXD_LIMITS, or a TLS certificate without its key (or the reverse, or
// either unparsable), 1 for any other failure.
func Main(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	if err := dumpable.Off(); err != nil {
		fmt.Fprintf(stderr, "sandboxd: %v\n", err)
		return 1
	}
	fs := flag.NewFlagSet("sandboxd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := Config{}
	fs.StringVar(&cfg.Addr, "addr", DefaultAddr, "`host:port` to listen on (only this address is bound)")
	fs.StringVar(&cfg.Workspace, "workspace", "", "workspace `directory` (required; created if missing)")
	fs.StringVar(&cfg.StateDir, "state", "", "state `directory` for the call ledger, outside the workspace (required: clients retry mutating calls that carry a call id)")
	idle := time.Duration(0)
	if s := lookup(environ, EnvIdleTimeout); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			fmt.Fprintf(stderr, "sandboxd: %s=%q: want a duration such as 15m\n", EnvIdleTimeout, s)
			return 2
		}
		idle = d
	}
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", idle, "stop after this long without a request (0: never; default $"+EnvIdleTimeout+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sandboxd: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	if cfg.Workspace == "" || cfg.StateDir == "" {
		fmt.Fprintln(stderr, "sandboxd: --workspace and --state are required")
		return 2
	}
	cfg.TokenSHA256 = lookup(environ, EnvTokenSHA256)
	if cfg.TokenSHA256 == "" {
		fmt.Fprintf(stderr, "sandboxd: %s is not set: refusing to start without a token (set it to the hex sha256 of the bearer token)\n", EnvTokenSHA256)
		return 2
	}
	cfg.Log = slog.New(slog.NewTextHandler(stderr, nil))
	cred, err := runAs(lookup(environ, EnvRunAs), os.Geteuid())
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd: %v\n", err)
		return 2
	}
	lim, err := parseLimits(lookup(environ, EnvLimits))
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd: %v\n", err)
		return 2
	}
	cfg.Sandbox = local.Options{Env: local.Allow(environ), Credential: cred, Limits: lim}
	cfg.TLSCertPEM, cfg.TLSKeyPEM = []byte(lookup(environ, EnvTLSCert)), []byte(lookup(environ, EnvTLSKey))
	scheme := "http"
	if len(cfg.TLSCertPEM) > 0 {
		scheme = "https"
	}
	srv, err := New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd: %v\n", err)
		return 2
	}
	// Spans are exported only when OTEL_EXPORTER_OTLP_ENDPOINT (or its
	// traces variant) is set (trace.go); commands never see OTEL_*.
	stopTraces, err := telemetry.Setup(ctx, func(k string) string { return lookup(environ, k) }, "sandboxd")
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd: %v\n", err)
		return 2
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTraces(flush); err != nil {
			cfg.Log.WarnContext(ctx, "sandboxd: flushing spans", "error", err)
		}
	}()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "sandboxd listening on %s://%s\n", scheme, ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "sandboxd: serving: %v\n", err)
		return 1
	}
	cfg.Log.InfoContext(ctx, "sandboxd: stopped")
	return 0
}

// lookup returns the value of the first name=value entry of environ.
func lookup(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
