// Package sandbox is the home of the sandbox concept: where a session's
// tools touch files and run commands, behind contracts.SandboxAPI (the 11
// methods of docs/DESIGN.md §6). It holds no code; its sub-packages are the
// placements and what they share:
//
//	local/      the implementation: a directory and subprocesses (path
//	            confinement, exec, environment scrubbing, the call ledger),
//	            and the "local" provider
//	proto/      the wire protocol between remote and server (routes, codes)
//	server/     sandboxd: a local sandbox served over HTTP
//	remote/     the HTTP client of a sandboxd (a SandboxAPI in another process)
//	placement/  choosing a provider by kind, fingerprints, tokens, the
//	            session's sandbox record
//	proc/       the "process" provider: sandboxd on loopback
//	fargate/    the "fargate" provider: sandboxd in an ECS task
//
// Tools never import any of these; they see only contracts.SandboxAPI.
//
// It may import nothing.
package sandbox
