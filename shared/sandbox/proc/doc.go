// Package proc is the "process" sandbox kind (docs/DESIGN.md §6): each
// session's sandbox is a sandboxd child process on loopback, spoken to over
// the same HTTP protocol as a Fargate task — the local stand-in for the
// "fargate" kind, used by `cairn dev`.
//
// Acquire reconnects when the session's record (contracts.SandboxRecord)
// names a "process" sandbox with the spec's fingerprint that answers with
// its token; otherwise it starts `sandboxd --addr 127.0.0.1:0` with a fresh
// token (sandboxd is given only its hash), reads the listening line, and
// records {Kind, ID "pid:<n>", Endpoint, TokenRef, Fingerprint, StartedAt}
// on the session with a conditional write, so that another process holding
// the same key and journal reconnects instead of starting another. A
// session's workspace and call-ledger state live under
// BaseDir/<session>/{workspace,state} and survive a replaced sandboxd (unlike
// Fargate, whose task storage dies with the task).
//
// The child gets only Config.Env (scrubbed again of the runtime's secrets)
// plus SANDBOXD_TOKEN_SHA256 (and SANDBOXD_LIMITS, the spec's limits,
// when it sets any): never the runtime's own environment. Children
// run in a process group of their own and outlive the provider unless Close
// stops them; an orphan stops by itself after IdleTimeout.
//
// Each started sandboxd is also named by a pid file in its session's
// directory (BaseDir/<session>/sandboxd-<pid>.pid: pid, start time, boot
// id), removed when it exits. A killed runtime leaves them behind; the next
// one, as the only user of BaseDir, calls Reap at boot (stopping those no
// session record names) and StopAll at a clean stop (stopping every one).
// A recorded pid is signalled through a pidfd, and only while its start
// time and boot still match: a reused pid is never touched.
//
// It may import shared/contracts, shared/sandbox/local (for Scrub),
// shared/sandbox/placement, shared/sandbox/remote, shared/sandbox/snapshot
// (Config.Snapshots), shared/sandbox/server
// (for its shutdown grace), the standard library and golang.org/x/sys.
//
// # Usage
//
//	p, err := proc.New(proc.Config{
//		Binary:   "/usr/local/bin/sandboxd",
//		BaseDir:  filepath.Join(dataDir, "sandboxes"),
//		Sessions: store, // the journal
//		Tokens:   placement.Tokens{Key: key},
//		Env:      []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
//		Log:      log,
//	})
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	sb, err := p.Acquire(ctx, sessionID, contracts.SandboxSpec{Kind: "process"})
package proc
