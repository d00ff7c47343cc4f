// Package sandboxtest is the conformance suite of the contracts.SandboxAPI
// port (docs/DESIGN.md §6), run against every placement: the local
// directory, the remote client talking to sandboxd, …
//
// It matches errors with errors.Is on the contracts sentinels. The suite needs
// the host directory that backs the workspace, to plant files and symlinks
// (one to /etc, one to a directory outside the workspace) and to check what
// a call really did, so the sandbox must run on the test's host. PathRace
// starts python3 (skipped without it) to swap a workspace directory with a
// symlink to an outside one while the path methods run; HardLinks links a
// file from outside into the workspace.
//
// It may import shared/contracts, the standard library (testing
// included) and golang.org/x/sys/unix (pidfds, to wait for a process's
// exit).
//
// # Usage
//
//	func TestConformance(t *testing.T) {
//		sandboxtest.Run(t, func(t *testing.T) (contracts.SandboxAPI, string) {
//			dir := t.TempDir()
//			sb, err := local.New(dir, local.Options{Env: os.Environ()})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return sb, dir
//		})
//	}
//
// newSandbox is called once per subtest, from parallel subtests; each call
// must return a fresh, empty workspace.
package sandboxtest
