package sandboxtest

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// outsider plants escape routes in the workspace: "etc" → /etc, "out" → a
// directory outside the workspace holding secret.txt, "outfile" → that file,
// "dangling" → a file not yet there, "sub/up" → "../.." (relative escape),
// "loop" → "." (a cycle). It returns the outside directory and the relative
// path from the workspace root to it.
func (s *suite) outsider(t *testing.T) (outside, relOut string) {
	t.Helper()
	outside = t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("SECRET-OUTSIDE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	realRoot, err := filepath.EvalSymlinks(s.root)
	noErr(t, "eval root", err)
	realOut, err := filepath.EvalSymlinks(outside)
	noErr(t, "eval outside", err)
	relOut, err = filepath.Rel(realRoot, realOut)
	noErr(t, "rel", err)
	s.put(t, "sub/f.txt", "inside\n")
	s.symlink(t, "/etc", "etc")
	s.symlink(t, outside, "out")
	s.symlink(t, filepath.Join(outside, "secret.txt"), "outfile")
	s.symlink(t, filepath.Join(outside, "new.txt"), "dangling")
	s.symlink(t, "../..", "sub/up")
	s.symlink(t, ".", "loop")
	return outside, filepath.ToSlash(relOut)
}

// checkOutside fails if anything outside the workspace was changed.
func checkOutside(t *testing.T, outside string) {
	t.Helper()
	entries, err := os.ReadDir(outside)
	noErr(t, "read outside", err)
	if len(entries) != 1 || entries[0].Name() != "secret.txt" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("outside directory now holds %v", names)
	}
	b, err := os.ReadFile(filepath.Join(outside, "secret.txt"))
	if err != nil || string(b) != "SECRET-OUTSIDE\n" {
		t.Errorf("outside secret changed: %q, %v", b, err)
	}
}

// TestConfinement: reads, listings and commands never reach outside.
func testConfinement(t *testing.T, s *suite) {
	outside, relOut := s.outsider(t)
	paths := []string{
		"../../etc/passwd", "/etc/passwd", "a/../../x", "..", "../", "./..",
		"etc", "etc/passwd", "out", "out/secret.txt", "outfile",
		filepath.Join(outside, "secret.txt"), relOut + "/secret.txt",
		"sub/up", "sub/up/x", "loop/etc/passwd", "loop/../..",
	}
	for _, p := range paths {
		_, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: p})
		wantErr(t, "ReadFile "+p, err, contracts.ErrPermission)
		_, err = s.api.ListDir(s.ctx, p)
		wantErr(t, "ListDir "+p, err, contracts.ErrPermission)
		_, err = s.api.Stat(s.ctx, p)
		wantErr(t, "Stat "+p, err, contracts.ErrPermission)
		_, err = s.api.Grep(s.ctx, contracts.GrepRequest{Pattern: "root", Path: p})
		wantErr(t, "Grep "+p, err, contracts.ErrPermission)
		_, err = s.api.Exec(s.ctx, contracts.ExecRequest{Command: "true", Dir: p, Timeout: 10 * time.Second})
		wantErr(t, "Exec in "+p, err, contracts.ErrPermission)
	}
	for _, p := range []string{"a\x00b", "sub/f.txt\x00"} {
		_, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: p})
		wantErr(t, "ReadFile with NUL", err, contracts.ErrPermission, contracts.ErrInvalid)
	}
	checkOutside(t, outside)
}

// testConfinementWrites: writes, edits, removals and mkdirs aimed outside
// (only at the test's own temporary directories) are refused and change
// nothing there.
func testConfinementWrites(t *testing.T, s *suite) {
	outside, relOut := s.outsider(t)
	parent := filepath.Dir(s.root)
	writes := []string{
		filepath.Join(outside, "pwned.txt"), relOut + "/pwned.txt", "out/pwned.txt",
		"outfile", "dangling", "sub/up/pwned.txt", "a/../../pwned.txt", "../pwned.txt",
		"out/newdir/pwned.txt", "loop/sub/up/pwned.txt",
	}
	for _, p := range writes {
		err := s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: p, Content: "pwned"})
		wantErr(t, "WriteFile "+p, err, contracts.ErrPermission)
		err = s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: p, Content: "pwned", Append: true})
		wantErr(t, "WriteFile append "+p, err, contracts.ErrPermission)
		_, err = s.api.EditFile(s.ctx, contracts.EditFileRequest{Path: p, Old: "SECRET", New: "PWNED"})
		wantErr(t, "EditFile "+p, err, contracts.ErrPermission)
		err = s.api.MakeDir(s.ctx, path.Join(p, "newdir"))
		wantErr(t, "MakeDir "+p, err, contracts.ErrPermission)
	}
	for _, p := range []string{"out/secret.txt", filepath.Join(outside, "secret.txt"), relOut + "/secret.txt", "sub/up/x", "..", "loop/.."} {
		wantErr(t, "Remove "+p, s.api.Remove(s.ctx, p, true), contracts.ErrPermission)
	}
	checkOutside(t, outside)
	if _, err := os.Lstat(filepath.Join(parent, "pwned.txt")); err == nil {
		t.Errorf("a file was written next to the workspace")
	}
	if _, err := os.Lstat(filepath.Join(outside, "new.txt")); err == nil {
		t.Errorf("writing a dangling symlink created its target")
	}
	// Removing a symlink removes the link, never its target.
	noErr(t, "remove link", s.api.Remove(s.ctx, "outfile", false))
	noErr(t, "remove dir link", s.api.Remove(s.ctx, "out", true))
	if s.exists("outfile") || s.exists("out") {
		t.Error("links still exist")
	}
	checkOutside(t, outside)
}

// testConfinementSearch: glob and grep never reveal what lies outside.
func testConfinementSearch(t *testing.T, s *suite) {
	outside, _ := s.outsider(t)
	escaped := func(p string) bool {
		for _, pre := range []string{"etc/", "out/", "outfile/", "sub/up/", "loop/etc/", "loop/out/"} {
			if strings.HasPrefix(p, pre) {
				return true
			}
		}
		return strings.Contains(p, "passwd") || strings.Contains(p, "secret")
	}
	for _, pattern := range []string{"**", "*", "**/*", "etc/*", "etc/**", "out/*", "**/passwd", "**/secret.txt", "/etc/*", "../*", "sub/up/*", "loop/**", "outfile"} {
		got, err := s.api.Glob(s.ctx, pattern)
		if err != nil {
			wantErr(t, "Glob "+pattern, err, contracts.ErrPermission)
			continue
		}
		for _, p := range got {
			if escaped(p) {
				t.Errorf("Glob(%q) revealed %q", pattern, p)
			}
		}
	}
	for _, req := range []contracts.GrepRequest{
		{Pattern: "SECRET-OUTSIDE"}, {Pattern: "root:"}, {Pattern: "SECRET", Glob: "**"}, {Pattern: "root", Path: "sub"},
	} {
		got, err := s.api.Grep(s.ctx, req)
		noErr(t, "Grep "+req.Pattern, err)
		for _, m := range got.Matches {
			if m.Path != "sub/f.txt" {
				t.Errorf("Grep(%q) revealed %+v", req.Pattern, m)
			}
		}
	}
	checkOutside(t, outside)
}

// testInsideSymlinks: a symlink pointing inside the workspace is followed.
func testInsideSymlinks(t *testing.T, s *suite) {
	s.put(t, "sub/f.txt", "inside\n")
	s.symlink(t, "sub", "inlink")
	s.symlink(t, "sub/f.txt", "infile")
	s.symlink(t, "../sub/f.txt", "sub2/rel")
	for _, p := range []string{"infile", "inlink/f.txt", "sub2/rel"} {
		got, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: p})
		noErr(t, "read "+p, err)
		if got.Content != "inside\n" {
			t.Errorf("read %s = %q", p, got.Content)
		}
	}
	noErr(t, "write through dir link", s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "inlink/g.txt", Content: "g"}))
	if s.content(t, "sub/g.txt") != "g" {
		t.Error("write through a directory link missed sub/g.txt")
	}
	noErr(t, "write through file link", s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "infile", Content: "new\n"}))
	if s.content(t, "sub/f.txt") != "new\n" {
		t.Error("write through a file link missed sub/f.txt")
	}
	list, err := s.api.ListDir(s.ctx, "inlink")
	noErr(t, "list link", err)
	if len(list) != 2 || list[0].Path != "inlink/f.txt" || list[1].Path != "inlink/g.txt" {
		t.Errorf("list inlink = %+v", list)
	}
	fi, err := s.api.Stat(s.ctx, "inlink")
	noErr(t, "stat link", err)
	if !fi.IsDir {
		t.Errorf("stat inlink = %+v", fi)
	}
	noErr(t, "remove file link", s.api.Remove(s.ctx, "infile", false))
	if s.exists("infile") || !s.exists("sub/f.txt") {
		t.Error("removing a link must remove the link only")
	}
}

// testSpecialFiles: a FIFO in the workspace never blocks a call.
func testSpecialFiles(t *testing.T, s *suite) {
	if err := syscall.Mkfifo(s.host("fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "fifo"})
	wantErr(t, "read fifo", err, contracts.ErrInvalid)
	err = s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "fifo", Content: "x"})
	wantErr(t, "write fifo", err, contracts.ErrInvalid)
	_, err = s.api.EditFile(s.ctx, contracts.EditFileRequest{Path: "fifo", Old: "x", New: "y"})
	wantErr(t, "edit fifo", err, contracts.ErrInvalid)
	got, err := s.api.Grep(s.ctx, contracts.GrepRequest{Pattern: "x"})
	noErr(t, "grep with a fifo", err)
	if len(got.Matches) != 0 {
		t.Errorf("grep = %+v", got)
	}
}
