package sandboxtest

import (
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

func testReadWrite(t *testing.T, s *suite) {
	noErr(t, "write", s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "a/b/c.txt", Content: "hello\nworld\n", CallID: "call-1"}))
	if got := s.content(t, "a/b/c.txt"); got != "hello\nworld\n" {
		t.Fatalf("host content = %q", got)
	}
	reads := []struct {
		name      string
		req       contracts.ReadFileRequest
		content   string
		truncated bool
	}{
		{"whole", contracts.ReadFileRequest{Path: "a/b/c.txt"}, "hello\nworld\n", false},
		{"offset", contracts.ReadFileRequest{Path: "a/b/c.txt", Offset: 6}, "world\n", false},
		{"limit", contracts.ReadFileRequest{Path: "a/b/c.txt", Limit: 5}, "hello", true},
		{"offset and limit", contracts.ReadFileRequest{Path: "a/b/c.txt", Offset: 6, Limit: 3}, "wor", true},
		{"offset past end", contracts.ReadFileRequest{Path: "a/b/c.txt", Offset: 100}, "", false},
		{"dotted path", contracts.ReadFileRequest{Path: "./a/x/../b/c.txt"}, "hello\nworld\n", false},
	}
	for _, r := range reads {
		got, err := s.api.ReadFile(s.ctx, r.req)
		noErr(t, r.name, err)
		if got.Content != r.content || got.Truncated != r.truncated || got.Size != 12 {
			t.Errorf("%s: got %+v, want content %q truncated %v size 12", r.name, got, r.content, r.truncated)
		}
	}

	noErr(t, "append", s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "a/b/c.txt", Content: "more\n", Append: true}))
	if got := s.content(t, "a/b/c.txt"); got != "hello\nworld\nmore\n" {
		t.Errorf("after append: %q", got)
	}
	noErr(t, "append creates", s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "new.txt", Content: "n", Append: true}))
	if got := s.content(t, "new.txt"); got != "n" {
		t.Errorf("append to a new file: %q", got)
	}
	noErr(t, "replace", s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "a/b/c.txt", Content: "x"}))
	if got := s.content(t, "a/b/c.txt"); got != "x" {
		t.Errorf("after replace: %q", got)
	}
	noErr(t, "empty", s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "empty.txt"}))
	got, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "empty.txt"})
	noErr(t, "read empty", err)
	if got.Content != "" || got.Size != 0 || got.Truncated {
		t.Errorf("empty file: %+v", got)
	}
	const utf = "héllo, 世界 🌍\n"
	noErr(t, "utf-8", s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "utf.txt", Content: utf}))
	got, err = s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "utf.txt"})
	noErr(t, "read utf-8", err)
	if got.Content != utf {
		t.Errorf("utf-8 round trip: %q", got.Content)
	}
}

func testReadWriteErrors(t *testing.T, s *suite) {
	s.put(t, "dir/f.txt", "f")
	_, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "missing.txt"})
	wantErr(t, "read missing", err, contracts.ErrNotFound)
	_, err = s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "dir/f.txt/x"})
	wantErr(t, "read through a file", err, contracts.ErrNotFound)
	_, err = s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "dir"})
	wantErr(t, "read a directory", err, contracts.ErrInvalid)
	_, err = s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "dir/f.txt", Offset: -1})
	wantErr(t, "negative offset", err, contracts.ErrInvalid)
	err = s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "", Content: "x"})
	wantErr(t, "write empty path", err, contracts.ErrInvalid)
	err = s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: "dir", Content: "x"})
	wantErr(t, "write over a directory", err, contracts.ErrInvalid)
}

func testEditFile(t *testing.T, s *suite) {
	tests := []struct {
		name    string
		content string
		req     contracts.EditFileRequest
		want    string
		n       int
		err     error
	}{
		{"once", "a b a", contracts.EditFileRequest{Old: "b", New: "B"}, "a B a", 1, nil},
		{"all", "a b a", contracts.EditFileRequest{Old: "a", New: "xy", All: true}, "xy b xy", 2, nil},
		{"all with one", "a b", contracts.EditFileRequest{Old: "b", New: "c", All: true}, "a c", 1, nil},
		{"delete", "keep drop keep", contracts.EditFileRequest{Old: " drop", New: ""}, "keep keep", 1, nil},
		{"multi-line", "l1\nl2\nl3\n", contracts.EditFileRequest{Old: "l2\nl3", New: "L"}, "l1\nL\n", 1, nil},
		{"not found", "a b a", contracts.EditFileRequest{Old: "zzz", New: "y"}, "a b a", 0, contracts.ErrInvalid},
		{"ambiguous", "a b a", contracts.EditFileRequest{Old: "a", New: "y"}, "a b a", 0, contracts.ErrInvalid},
		{"empty old", "a b a", contracts.EditFileRequest{Old: "", New: "y"}, "a b a", 0, contracts.ErrInvalid},
	}
	for _, tc := range tests {
		s.put(t, "e.txt", tc.content)
		tc.req.Path = "e.txt"
		tc.req.CallID = "call-" + tc.name
		res, err := s.api.EditFile(s.ctx, tc.req)
		if tc.err != nil {
			wantErr(t, tc.name, err, tc.err)
		} else {
			noErr(t, tc.name, err)
			if res.Replacements != tc.n {
				t.Errorf("%s: replacements = %d, want %d", tc.name, res.Replacements, tc.n)
			}
		}
		if got := s.content(t, "e.txt"); got != tc.want {
			t.Errorf("%s: content = %q, want %q", tc.name, got, tc.want)
		}
	}
	_, err := s.api.EditFile(s.ctx, contracts.EditFileRequest{Path: "missing.txt", Old: "a", New: "b"})
	wantErr(t, "edit missing", err, contracts.ErrNotFound)
}

func testListDir(t *testing.T, s *suite) {
	s.put(t, "d/b.txt", "bbb")
	s.put(t, "d/a.txt", "a")
	s.put(t, "d/.hidden", "")
	s.put(t, "d/sub/x", "")
	got, err := s.api.ListDir(s.ctx, "d")
	noErr(t, "list", err)
	want := []struct {
		path  string
		size  int64
		isDir bool
	}{
		{"d/.hidden", 0, false},
		{"d/a.txt", 1, false},
		{"d/b.txt", 3, false},
		{"d/sub", -1, true},
	}
	if len(got) != len(want) {
		t.Fatalf("list d = %+v, want %d entries", got, len(want))
	}
	for i, w := range want {
		if got[i].Path != w.path || got[i].IsDir != w.isDir || (w.size >= 0 && got[i].Size != w.size) {
			t.Errorf("entry %d = %+v, want path %s dir %v size %d", i, got[i], w.path, w.isDir, w.size)
		}
	}
	for _, p := range []string{"", "."} {
		root, err := s.api.ListDir(s.ctx, p)
		noErr(t, "list root "+p, err)
		if len(root) != 1 || root[0].Path != "d" || !root[0].IsDir {
			t.Errorf("list %q = %+v, want [d/]", p, root)
		}
	}
	_, err = s.api.ListDir(s.ctx, "missing")
	wantErr(t, "list missing", err, contracts.ErrNotFound)
	_, err = s.api.ListDir(s.ctx, "d/a.txt")
	wantErr(t, "list a file", err, contracts.ErrInvalid)
}

func testStat(t *testing.T, s *suite) {
	s.put(t, "d/f.txt", "12345")
	fi, err := s.api.Stat(s.ctx, "d/f.txt")
	noErr(t, "stat file", err)
	if fi.Path != "d/f.txt" || fi.Size != 5 || fi.IsDir || fi.ModTime.IsZero() {
		t.Errorf("stat file = %+v", fi)
	}
	fi, err = s.api.Stat(s.ctx, "d")
	noErr(t, "stat dir", err)
	if fi.Path != "d" || !fi.IsDir {
		t.Errorf("stat dir = %+v", fi)
	}
	fi, err = s.api.Stat(s.ctx, ".")
	noErr(t, "stat root", err)
	if !fi.IsDir {
		t.Errorf("stat root = %+v", fi)
	}
	_, err = s.api.Stat(s.ctx, "d/missing")
	wantErr(t, "stat missing", err, contracts.ErrNotFound)
}

func testRemove(t *testing.T, s *suite) {
	s.put(t, "f.txt", "f")
	s.put(t, "full/a/b.txt", "b")
	s.mkdir(t, "empty")
	noErr(t, "remove file", s.api.Remove(s.ctx, "f.txt", false))
	if s.exists("f.txt") {
		t.Error("f.txt still exists")
	}
	wantErr(t, "remove missing", s.api.Remove(s.ctx, "f.txt", false), contracts.ErrNotFound)
	if err := s.api.Remove(s.ctx, "full", false); err == nil {
		t.Error("removing a non-empty directory without recursive succeeded")
	}
	if !s.exists("full/a/b.txt") {
		t.Error("non-recursive remove deleted content")
	}
	noErr(t, "remove empty dir", s.api.Remove(s.ctx, "empty", false))
	noErr(t, "remove recursive", s.api.Remove(s.ctx, "full", true))
	if s.exists("full") {
		t.Error("full still exists")
	}
	for _, p := range []string{".", "", "./", "x/..", "a/../."} {
		wantErr(t, "remove root "+p, s.api.Remove(s.ctx, p, true), contracts.ErrPermission)
	}
	if _, err := s.api.Stat(s.ctx, "."); err != nil {
		t.Errorf("workspace root gone: %v", err)
	}
}

func testMakeDir(t *testing.T, s *suite) {
	noErr(t, "mkdir", s.api.MakeDir(s.ctx, "x/y/z"))
	fi, err := s.api.Stat(s.ctx, "x/y/z")
	noErr(t, "stat", err)
	if !fi.IsDir {
		t.Errorf("x/y/z = %+v", fi)
	}
	noErr(t, "mkdir again", s.api.MakeDir(s.ctx, "x/y/z"))
	noErr(t, "mkdir root", s.api.MakeDir(s.ctx, "."))
	s.put(t, "file", "f")
	wantErr(t, "mkdir over a file", s.api.MakeDir(s.ctx, "file"), contracts.ErrExists, contracts.ErrInvalid)
	wantErr(t, "mkdir under a file", s.api.MakeDir(s.ctx, "file/sub"), contracts.ErrExists, contracts.ErrInvalid, contracts.ErrNotFound)
}
