package sandboxremote_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox"
	"github.com/cairnrun/cairn/shared/sandboxd"
	"github.com/cairnrun/cairn/shared/sandboxremote"
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
	local, err := sandbox.NewLocal(localDir, sandbox.Options{Env: env})
	if err != nil {
		b.Fatal(err)
	}
	url := serve(b, sandboxd.Config{Workspace: remoteDir, Sandbox: sandbox.Options{Env: env}})
	return []struct {
		name string
		api  contracts.SandboxAPI
	}{{"local", local}, {"remote", newClient(b, url, sandboxremote.Options{})}}
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
