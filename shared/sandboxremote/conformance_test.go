package sandboxremote_test

import (
	"os"
	"testing"

	"github.com/cairnrun/cairn/shared/conformance/sandboxtest"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox"
	"github.com/cairnrun/cairn/shared/sandboxd"
	"github.com/cairnrun/cairn/shared/sandboxremote"
)

// The remote client talking to sandboxd over loopback passes the same suite
// as the local sandbox.
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) (contracts.SandboxAPI, string) {
		dir := t.TempDir()
		url := serve(t, sandboxd.Config{Workspace: dir, StateDir: t.TempDir(), Sandbox: sandbox.Options{Env: os.Environ()}})
		return newClient(t, url, sandboxremote.Options{}), dir
	})
}
