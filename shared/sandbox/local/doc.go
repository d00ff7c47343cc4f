// Package local implements the local placement of the SandboxAPI port
// (docs/DESIGN.md §6): a workspace directory on the host and subprocesses.
//
// It owns path confinement (every path is workspace-relative; "..",
// absolute paths and symlinks resolving outside the root are refused with
// contracts.ErrPermission; every file method resolves its path once,
// through an os.Root on the workspace, and regular files with more than
// one hard link are not read or written: see path.go), command execution (`bash -c` in a process group
// of its own — and in a cgroup v2 of its own where the host has one, else
// under a child-subreaper wrapper (HostContainment, contain.go,
// reaper_linux.go), so every descendant is killed when the call ends — killed as a whole at the timeout, under the spec's per-call
// limits (limits.go), with output capped per stream and a scrubbed
// environment whose HOME is the workspace), the call
// ledger that makes mutating calls with a CallID effect-once (CallOutcome;
// CancelCall stops a running call by its id and records it cancelled), and
// the Provider that gives each session a directory under a base directory
// (run as root, its commands run as an unprivileged user that owns the
// workspace and cannot reach the ledger: RunAs, Owned, runas.go).
// sandboxd (shared/sandbox/server) wraps a Sandbox to serve the same API
// over HTTP.
//
// It may import shared/contracts, shared/sandbox/placement (for
// CheckSessionID), shared/sandbox/proto (the error codes its call ledger
// records), shared/sandbox/snapshot (the workspace export and import of
// archive.go), the standard library and doublestar. Only the caller reads the
// process environment: it passes the base environment of commands as
// Options.Env (cmd/cairn passes an allowlist of its own), and Scrub removes
// the runtime's secrets from it all the same.
//
// # Usage
//
//	sb, err := local.New(dir, local.Options{Env: os.Environ()})
//	if err != nil {
//		return err
//	}
//	err = sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "notes.txt", Content: "hi\n"})
//	res, err := sb.Exec(ctx, contracts.ExecRequest{Command: "wc -l notes.txt", Timeout: 5 * time.Second})
//	// res.Stdout == "1 notes.txt\n"
//
// For sessions:
//
//	p := local.NewProvider(baseDir, local.Options{Env: os.Environ()})
//	api, err := p.Acquire(ctx, sessionID, spec.Sandbox)
package local
