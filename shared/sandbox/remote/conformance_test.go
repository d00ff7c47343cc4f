package remote_test

import (
	"os"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/testkit/conformance/sandboxtest"
)

// The remote client talking to sandboxd over loopback passes the same suite
// as the local sandbox.
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) (contracts.SandboxAPI, string) {
		dir := t.TempDir()
		url := serve(t, server.Config{Workspace: dir, StateDir: t.TempDir(), Sandbox: local.Options{Env: os.Environ()}})
		return newClient(t, url, remote.Options{}), dir
	})
}
