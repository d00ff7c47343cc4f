// Package snapshot makes a session's workspace outlive its sandbox
// (issue 15, docs/ARCHITECTURE.md "Durable workspaces"): a snapshot is a
// manifest of the workspace's directories, files and symlinks whose file
// contents are split into chunks of ChunkSize, each stored in the blob
// store under its SHA-256 (contracts.BlobStore: create-if-absent), so a
// snapshot stores only the chunks the previous one did not have.
//
// Both ends live here. In the sandbox (local.Sandbox, served by sandboxd as
// POST /v1/workspace/export and /v1/workspace/import), Export walks the
// workspace through its os.Root and writes a tar stream: one "chunk/<sha>"
// entry per chunk the caller does not have, then "manifest.json"; a Cache of
// each file's chunk hashes, keyed by inode, size, mtime and ctime, spares
// re-reading unchanged files. Import writes a plain tar stream of the
// workspace into an empty workspace through its os.Root. In the runtime,
// Store.Save reads an export, verifies every chunk's hash, stores the
// chunks and the manifest, and returns the contracts.WorkspaceSnapshot;
// Store.Restore streams a snapshot from the blob store into Import.
//
// What a snapshot keeps and leaves out: directories, regular files (their
// permission bits, no setuid/setgid/sticky; their modification time) and
// symlinks (their target as written); sockets, fifos and devices are left
// out and counted; hard links become separate copies; owners are not kept
// (the restored files belong to the commands' user). A workspace over
// Limits (DefaultMaxBytes, DefaultMaxEntries) is not snapshotted: the
// export fails with ErrTooLarge naming the limit, and the previous
// snapshot stays the latest.
//
// It may import shared/contracts and the standard library.
package snapshot
