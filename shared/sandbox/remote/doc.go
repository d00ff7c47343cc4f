// Package remote is the remote placement of the SandboxAPI port
// (docs/DESIGN.md §6): an HTTP client of a sandboxd server
// (shared/sandbox/server) speaking the shared/sandbox/proto protocol. A
// Client implements contracts.SandboxAPI and contracts.CallLedger, so tools
// and recovery use it exactly like the local sandbox.
//
// It owns the client side only: authentication with the sandbox's bearer
// token (never put in an error or a log line), deadlines, retries, and
// turning wire errors back into the contracts sentinels — errors.Is works
// for ErrNotFound, ErrPermission (also for a wrong token), ErrTimeout,
// ErrTooLarge, ErrInvalid, ErrConflict and ErrExists as with the local
// sandbox; an endpoint that cannot be reached (connection refused, DNS,
// connect timeout, 502/503) is ErrUnavailable; a deadline of the caller or
// of the call is ErrTimeout.
//
// Retries (with backoff, Options.Retries times) are for calls that are
// safe to repeat: read-only calls, MakeDir, Health and CallOutcome, after a
// connection error or a 502/503/504 answer. A mutating call (WriteFile,
// EditFile, Exec, RunScript) is never repeated blindly: only when its
// request carries a CallID, because sandboxd records call ids and answers a
// repeat with the recorded outcome (effect-once; contracts.CallLedger).
// Without a CallID — and for Remove — a request is sent again only when no
// connection could be made at all.
//
// Stopping: when the caller's context of a mutating call with a CallID is
// cancelled (context.Canceled: the turn was cancelled, its lease lost, the
// process stopping) while the call is in flight, the client sends POST
// /v1/cancel for that id — best effort, on a fresh context of
// CancelTimeout — so sandboxd kills it, then returns the context's error.
// A deadline (context.DeadlineExceeded: a Lambda's own deadline, the call's
// Timeout) sends no cancel: the call runs on and its recorded outcome
// awaits a repeat of the id (the reasons: cancel.go).
//
// Pinned TLS (Options.CertSHA256, the sandbox record's CertSHA256): the
// client accepts only the server certificate with that SHA-256 — no CA, no
// host name — checked in the handshake before anything is sent; another
// certificate is ErrUnavailable (and ErrCertMismatch), never retried, and
// the client never falls back to plain HTTP.
//
// Traces: every request is a client span "cairn.sandbox.http <method>"
// (retries are its events) whose W3C traceparent header sandboxd continues
// (trace.go).
//
// It may import shared/contracts, shared/sandbox/proto,
// shared/sandbox/snapshot (the workspace streams it carries: workspace.go),
// shared/telemetry (its spans: trace.go), the OpenTelemetry API and the
// standard library.
//
// # Usage
//
//	sb, err := remote.New("http://10.0.1.7:7070", token, remote.Options{})
//	if err != nil {
//		return err
//	}
//	if err := sb.Health(ctx); err != nil { // errors.Is(err, contracts.ErrUnavailable)
//		return err
//	}
//	res, err := sb.Exec(ctx, contracts.ExecRequest{Command: "go test ./...", Timeout: 5 * time.Minute, CallID: call.ID})
//	// after a crash, before reporting the call as interrupted:
//	out, err := sb.CallOutcome(ctx, call.ID) // out.State: unknown, running or done
package remote
