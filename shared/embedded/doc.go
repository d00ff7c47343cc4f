// Package embedded is the home of cairn's single-process backend, used by
// `cairn dev` and `cairn run`. It holds no code:
//
//	backend/  the embedded backend: the data directory and its lock, the
//	          ports for assemble.New (SQLite stores, local and process
//	          sandboxes, the isolate subprocess, model providers)
//	sqlite/   every store and the queue on one SQLite file (pure Go)
//
// Nothing outside cmd/cairn and the tests imports it; no function binary
// links it (docs/docs_test.go checks both).
//
// It may import nothing.
package embedded
