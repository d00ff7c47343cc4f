package remote_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

// placements returns the local sandbox and a remote client of sandboxd
// over loopback, each on its own workspace holding note.txt.
func placements(b *testing.B) []struct {
	name string
	api  contracts.SandboxAPI
} {
	b.Helper()
	env := []string{"PATH=" + os.Getenv("PATH")}
	localDir, remoteDir := b.TempDir(), b.TempDir()
	for _, dir := range []string{localDir, remoteDir} {
		if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("a short note\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	lsb, err := local.New(localDir, local.Options{Env: env, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	url := serve(b, server.Config{Workspace: remoteDir, StateDir: b.TempDir(), Sandbox: local.Options{Env: env}})
	return []struct {
		name string
		api  contracts.SandboxAPI
	}{{"local", lsb}, {"remote", newClient(b, url, remote.Options{})}}
}

func BenchmarkReadFile(b *testing.B) {
	for _, p := range placements(b) {
		b.Run(p.name, func(b *testing.B) {
			ctx := b.Context()
			for b.Loop() {
				if _, err := p.api.ReadFile(ctx, contracts.ReadFileRequest{Path: "note.txt"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkExec(b *testing.B) {
	for _, p := range placements(b) {
		b.Run(p.name, func(b *testing.B) {
			ctx := b.Context()
			for b.Loop() {
				if res, err := p.api.Exec(ctx, contracts.ExecRequest{Command: "true"}); err != nil || res.ExitCode != 0 {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// BenchmarkWriteFileWithCallID is the path a write_file tool call takes:
// a mutating request under a fresh call id, recorded in the ledger (kept
// full at its bound, so eviction is included).
func BenchmarkWriteFileWithCallID(b *testing.B) {
	for _, p := range placements(b) {
		b.Run(p.name, func(b *testing.B) {
			ctx := b.Context()
			for i := range local.DefaultMaxCalls {
				if err := p.api.WriteFile(ctx, contracts.WriteFileRequest{Path: "w.txt", Content: "x", CallID: fmt.Sprintf("fill-%d", i)}); err != nil {
					b.Fatal(err)
				}
			}
			n := 0
			for b.Loop() {
				n++
				if err := p.api.WriteFile(ctx, contracts.WriteFileRequest{Path: "w.txt", Content: "x", CallID: fmt.Sprintf("call-%d", n)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
