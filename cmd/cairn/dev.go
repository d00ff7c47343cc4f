package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/auth"
	embedded "github.com/cairnrun/cairn/shared/embedded/backend"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/telemetry"
)

func cmdDev(ctx context.Context, env envDefaults, args []string) error {
	if len(args) >= 2 && args[0] == "--backend" {
		switch args[1] {
		case "aws":
			return cmdDevAWS(ctx, env, args[2:])
		case "embedded":
			args = args[2:]
		default:
			return fmt.Errorf("dev: --backend %q: want embedded or aws", args[1])
		}
	}
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	data := fs.String("data", env.Data, "data directory (created if missing)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (port 0 picks a free one)")
	token := fs.String("token", env.Token, "the owner's API bearer token (default: DATA/token's, else random; written to DATA/token)")
	stuck := fs.Duration("stuck-after", time.Minute, "repair re-drives a submission, and wakes a workflow run, idle this long")
	repairEvery := fs.Duration("repair-every", 5*time.Second, "repair ticker period")
	kind := fs.String("sandbox", "local", "default sandbox of a session: local (a directory) or process (sandboxd on loopback, as on Fargate)")
	otlp := fs.String("otlp", "", "export traces and metrics over OTLP/HTTP to this endpoint (e.g. http://127.0.0.1:4318; default: OTEL_EXPORTER_OTLP_ENDPOINT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopTelemetry, err := devTelemetry(ctx, env, *otlp, "cairn-dev")
	if err != nil {
		return err
	}
	defer stopTelemetry()
	if *stuck <= 0 || *repairEvery <= 0 {
		return fmt.Errorf("dev: --stuck-after and --repair-every must be positive durations")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the cairn binary (it runs sandboxd): %w", err)
	}
	if *data == "" {
		*data = defaultData()
	}
	if *token, _, err = serverToken(*data, *token); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	tokens := auth.Open(*data) // every request's principal: its bearer token's (DATA/tokens.json, re-read on change)
	rt, err := embedded.New(ctx, embedded.Config{DataDir: *data, Env: sandboxEnv(env.Environ), Getenv: env.getenv, SandboxKind: *kind, Sandboxd: []string{self, "sandboxd"}, Isolate: []string{self, "isolate"}, Runtime: assemble.Config{
		Authenticate: tokens.Request, Log: log, StuckAfter: *stuck, RepairEvery: *repairEvery,
	}})
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := keepOwnerToken(*data, *token); err != nil { // under the data dir's lock
		return err
	}
	return serve(ctx, *addr, rt.API, "cairn dev", rt.Serve, *token, *data, "link")
}

// serve listens on addr, runs background (workers, harness, repair) until
// ctx ends, prints the address and token lines tests and users wait for
// and how to open the web console (console "link": its sign-in link;
// "proxy": the cairn console command that signs for it), and shuts down
// gracefully.
func serve(ctx context.Context, addr string, h http.Handler, name string, background func(context.Context), token, data, console string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := newServer(h)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { background(sctx); close(done) }()
	fmt.Printf("%s listening on http://%s\n", name, ln.Addr())
	fmt.Printf("token %s (also in %s)\n", token, filepath.Join(data, "token"))
	switch console {
	case "link": // one click signs in; the console then drops the token from the address
		fmt.Printf("console http://%s/console/login?token=%s\n", ln.Addr(), url.QueryEscape(token))
	case "proxy":
		fmt.Printf("console: cairn console --api http://%s --token %s\n", ln.Addr(), token)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			cancel()
			<-done
			return err
		}
	}
	shut, c2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer c2()
	_ = srv.Shutdown(shut)
	cancel()
	<-done
	return nil
}

// Server timeouts: a client that stalls sending its request, or keeps a
// connection idle, is cut off; the write timeout (counted from the end of
// the request headers) leaves room for the body and the longest long-poll
// (api.MaxWait, 25 s).
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 60 * time.Second
)

func newServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: 64 << 10}
}

func newToken() string {
	return ids.RandomHex(16)
}

// devTelemetry installs trace and metric export for a dev server: to
// otlp when set, else as the standard OTEL_* variables say (nothing by
// default); the returned stop flushes what is buffered.
func devTelemetry(ctx context.Context, env envDefaults, otlp, service string) (stop func(), err error) {
	getenv := env.getenv
	if otlp != "" {
		getenv = func(k string) string {
			if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
				return otlp
			}
			return env.getenv(k)
		}
	}
	shutdown, err := telemetry.Setup(ctx, getenv, service)
	if err != nil {
		return nil, err
	}
	return func() {
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(flush)
	}, nil
}
