// Package placement holds what every remote sandbox provider shares
// (docs/DESIGN.md §6): the spec fingerprint that decides whether a recorded
// sandbox still fits, the per-sandbox bearer tokens, the conditional write of a
// session's SandboxRecord (Record, Replace), the per-session lock that keeps
// one process from starting two sandboxes (Locks), the check that a
// recorded sandbox still answers to its token (Probe), the Acquire loop of
// the remote kinds (Acquirer: reuse the recorded sandbox or start and record
// a new one), the session id check of the kinds that name a directory after
// the session (CheckSessionID), and the Router that picks a provider by
// kind. The providers are shared/sandbox/local ("local"),
// shared/sandbox/proc ("process") and shared/sandbox/fargate ("fargate").
//
// Tokens are never stored: a SandboxRecord keeps only a random TokenRef, and
// any process holding the deployment key (the tools Lambda, `cairn dev`)
// derives the token as HMAC-SHA256(key, sessionID/ref). sandboxd is given
// only the token's SHA-256 (HashHex). Neither the token nor the key is ever
// logged or recorded.
//
// A durable workspace (Acquirer.Snapshots, durable.go) is restored into a
// new sandbox from the session's latest snapshot before the sandbox is
// recorded, and the sandbox Acquire returns then snapshots it and carries
// the notice for the model (contracts.DurableWorkspace).
//
// Every sandbox the Router hands out is Traced (trace.go): each operation,
// whatever the kind, is a span "cairn.sandbox <method>", and Acquire and
// Release are spans of their own.
//
// It may import shared/contracts, shared/ids, shared/sandbox/snapshot,
// shared/telemetry (the operations' spans: trace.go), the OpenTelemetry API
// and the standard library.
//
// # Usage
//
//	key, err := placement.LoadOrCreateKey(filepath.Join(dataDir, "sandbox.key"))
//	tokens := placement.Tokens{Key: key}
//	ref := placement.NewRef()
//	token := tokens.Mint(sessionID, ref)  // give the client this
//	hash := placement.HashHex(token)      // give sandboxd this
//	rec := &contracts.SandboxRecord{Kind: "process", ID: "pid:42", Endpoint: url,
//		TokenRef: ref, Fingerprint: placement.Fingerprint(spec), StartedAt: now}
//	sess, err := placement.Replace(ctx, store, sessionID, old, rec) // ErrConflict: another writer placed one
//
// A deployment serving several kinds routes by SandboxSpec.Kind:
//
//	router := &placement.Router{Default: "process", Kinds: map[string]contracts.SandboxProvider{
//		"local": local, "process": proc, "fargate": fg}}
//	sb, err := router.Acquire(ctx, sessionID, spec)
package placement
