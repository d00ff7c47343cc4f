// Command sandboxd is the control server of a remote sandbox: it serves the
// SandboxAPI of one workspace over HTTP (shared/sandbox/server). It runs in a
// Fargate task (see Dockerfile) or as a local process on loopback.
//
//	SANDBOXD_TOKEN_SHA256=<hex sha256 of the token> sandboxd --addr 127.0.0.1:0 --workspace DIR --state DIR [--idle-timeout 15m]
//
// It may import shared/sandbox/server and the standard library.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cairnrun/cairn/shared/sandbox/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := server.Main(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
