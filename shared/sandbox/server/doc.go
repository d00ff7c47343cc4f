// Package server is sandboxd, the control server of a remote sandbox
// (docs/DESIGN.md §6): it serves the eleven SandboxAPI methods of a
// local.Sandbox over HTTP, speaking the shared/sandbox/proto wire protocol,
// so that the remote client (shared/sandbox/remote) in another process — a
// Lambda, the runtime on a laptop — drives a workspace that lives in a
// Fargate task or a local process.
//
// It owns the server side only: bearer-token authentication (the server is
// given the SHA-256 of the token, never the token, and compares in constant
// time; a request without the right token is refused with 401 before
// anything is read or done), the request body limit (413), the protocol
// version check, running mutating calls to completion even when the client
// goes away (so the call ledger records their outcome) unless a cancel
// names them (POST /v1/cancel: local.Sandbox.CancelCall), graceful shutdown
// and idle shutdown (a task nobody uses stops by itself), and Main, the
// whole of the sandboxd command. Commands get only the allowlisted part of
// sandboxd's environment (local.Allow); sandboxd is not dumpable
// (shared/dumpable); run as root it runs commands as SANDBOXD_RUN_AS
// (default nobody, runas.go), which owns the workspace but not the state
// directory; every command runs under the limits of SANDBOXD_LIMITS,
// checked at start (limits.go); the workspace's export and import streams
// of its snapshots (POST /v1/workspace/export and /v1/workspace/import,
// workspace.go; the format is shared/sandbox/snapshot's). Path confinement, timeouts, output caps,
// environment scrubbing and the call ledger belong to shared/sandbox/local.
//
// Every authorized request is a server span "cairn.sandboxd <method>",
// continuing the client's trace from its traceparent header (trace.go).
//
// It may import shared/contracts, shared/dumpable, shared/sandbox/local,
// shared/sandbox/proto, shared/sandbox/snapshot (the import limit of
// workspace.go), shared/telemetry (its spans and their export: trace.go),
// the OpenTelemetry API and the standard library.
//
// # Usage
//
//	srv, err := server.New(server.Config{
//		Workspace:   "/workspace",
//		StateDir:    "/var/lib/sandboxd",
//		TokenSHA256: hex.EncodeToString(sum[:]), // sha256 of the bearer token
//		IdleTimeout: 15 * time.Minute,
//		Sandbox:     local.Options{Env: env},
//	})
//	if err != nil {
//		return err
//	}
//	ln, err := net.Listen("tcp", "127.0.0.1:7070")
//	if err != nil {
//		return err
//	}
//	return srv.Serve(ctx, ln) // nil after ctx ends or the idle timeout
//
// In tests, srv.Handler() serves under httptest.NewServer.
package server
