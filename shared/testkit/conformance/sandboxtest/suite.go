package sandboxtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Run checks that the sandboxes made by newSandbox honour the SandboxAPI
// contract. newSandbox returns a fresh, empty workspace and the host
// directory backing it; it is called from parallel subtests.
func Run(t *testing.T, newSandbox func(t *testing.T) (api contracts.SandboxAPI, root string)) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"ReadWrite", testReadWrite},
		{"ReadWriteErrors", testReadWriteErrors},
		{"EditFile", testEditFile},
		{"ListDir", testListDir},
		{"Stat", testStat},
		{"Remove", testRemove},
		{"MakeDir", testMakeDir},
		{"Glob", testGlob},
		{"GlobErrors", testGlobErrors},
		{"Grep", testGrep},
		{"GrepErrors", testGrepErrors},
		{"Exec", testExec},
		{"ExecErrors", testExecErrors},
		{"ExecTimeoutKillsGroup", testExecTimeoutKillsGroup},
		{"ExecNeverEnds", testExecNeverEnds},
		{"ExecContextDeadline", testExecContextDeadline},
		{"ExecCancelKills", testExecCancelKills},
		{"ExecBackgroundChild", testExecBackgroundChild},
		{"ExecContainsDescendants", testExecContainsDescendants},
		{"ExecTimeoutContainsDescendants", testExecTimeoutContainsDescendants},
		{"ExecOutputCap", testExecOutputCap},
		{"ExecEnvScrubbed", testExecEnvScrubbed},
		{"RunScript", testRunScript},
		{"Confinement", testConfinement},
		{"ConfinementWrites", testConfinementWrites},
		{"ConfinementSearch", testConfinementSearch},
		{"InsideSymlinks", testInsideSymlinks},
		{"SpecialFiles", testSpecialFiles},
		{"PathRace", testPathRace},
		{"HardLinks", testHardLinks},
		{"EffectOnce", testEffectOnce},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api, root := newSandbox(t)
			tc.fn(t, &suite{api: api, root: root, ctx: t.Context()})
		})
	}
}

// suite is one subtest's sandbox and the host directory behind it.
type suite struct {
	api  contracts.SandboxAPI
	root string
	ctx  context.Context
}

// host is the host path of workspace path rel.
func (s *suite) host(rel string) string {
	return filepath.Join(s.root, filepath.FromSlash(rel))
}

// put writes a file directly on the host, creating parents.
func (s *suite) put(t *testing.T, rel, content string) {
	t.Helper()
	p := s.host(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mkdir creates a directory directly on the host.
func (s *suite) mkdir(t *testing.T, rel string) {
	t.Helper()
	if err := os.MkdirAll(s.host(rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

// symlink creates workspace entry rel pointing at target.
func (s *suite) symlink(t *testing.T, target, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(s.host(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, s.host(rel)); err != nil {
		t.Fatal(err)
	}
}

// content reads a file directly from the host ("<missing>" if absent).
func (s *suite) content(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(s.host(rel))
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exists reports whether rel exists on the host (symlinks not followed).
func (s *suite) exists(rel string) bool {
	_, err := os.Lstat(s.host(rel))
	return err == nil
}

// wantErr fails unless err matches one of the sentinels.
func wantErr(t *testing.T, what string, err error, sentinels ...error) {
	t.Helper()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Errorf("%s: err = %v, want one of %v", what, err, sentinels)
}

// noErr fails the test now if err is not nil.
func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eq compares two string slices, treating nil and empty alike.
func eq(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b))
}

// secretVar reports whether an environment variable name is one the runtime
// must never pass to a sandboxed process.
func secretVar(name string) bool {
	n := strings.ToUpper(name)
	if strings.HasPrefix(n, "CAIRN_") || strings.HasPrefix(n, "AWS_") {
		return true
	}
	for _, suf := range []string{"_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_ACCESS_KEY"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}
