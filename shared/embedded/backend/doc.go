// Package backend is the local (embedded) backend: one data directory
// holding a SQLite file (journal, transcript, streams, events, workflows,
// queue) and the sessions' sandbox directories, owned by one process at a
// time (a lock file). It makes the ports and hands them to the construction
// seam, assemble.New. Because it is the only owner, a new boot treats every
// lease it finds as dead: it breaks them, releases in-flight queue messages
// and re-drives every unfinished submission at once.
//
// It may import shared/assemble, shared/console, shared/contracts, shared/dumpable, shared/embedded/sqlite,
// shared/ids, shared/mcp, shared/mcp/serve, shared/pricing, shared/model/providers, shared/model/scripted,
// shared/sandbox/local, shared/sandbox/placement, shared/sandbox/proc,
// shared/sandbox/snapshot (the snapshot store of ephemeral workspaces),
// shared/secrets, shared/tools, shared/workflow/isolate, the standard
// library and the AWS SDK's configuration loader (for Bedrock).
//
// # Usage
//
//	rt, err := backend.New(ctx, backend.Config{DataDir: dir, Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}})
//	defer rt.Close()
//	go rt.Serve(ctx)
package backend
