package sandboxtest

import (
	"fmt"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

func testGlob(t *testing.T, s *suite) {
	for _, f := range []string{"a.go", "b.txt", "sub/c.go", "sub/deep/d.go", "sub/deep/e.txt", ".hidden/h.go"} {
		s.put(t, f, "x")
	}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"**/*.go", []string{".hidden/h.go", "a.go", "sub/c.go", "sub/deep/d.go"}},
		{"*.go", []string{"a.go"}},
		{"sub/*", []string{"sub/c.go", "sub/deep"}},
		{"sub/**/*.txt", []string{"sub/deep/e.txt"}},
		{"*.{go,txt}", []string{"a.go", "b.txt"}},
		{"./sub/*.go", []string{"sub/c.go"}},
		{"b.txt", []string{"b.txt"}},
		{"sub/deep/d.go", []string{"sub/deep/d.go"}},
		{"nomatch*", nil},
		{"missing/dir/*", nil},
	}
	for _, tc := range tests {
		got, err := s.api.Glob(s.ctx, tc.pattern)
		noErr(t, tc.pattern, err)
		if !eq(got, tc.want) {
			t.Errorf("Glob(%q) = %q, want %q", tc.pattern, got, tc.want)
		}
	}
}

func testGlobErrors(t *testing.T, s *suite) {
	_, err := s.api.Glob(s.ctx, "")
	wantErr(t, "empty pattern", err, contracts.ErrInvalid)
	_, err = s.api.Glob(s.ctx, "a/[")
	wantErr(t, "bad pattern", err, contracts.ErrInvalid)
}

func testGrep(t *testing.T, s *suite) {
	s.put(t, "b.txt", "foo\nbar\nfoo bar\n")
	s.put(t, "a.go", "package a\n// foo\n")
	s.put(t, "sub/c.go", "foo()\n")
	s.put(t, "sub/z.txt", "nothing\n")
	s.put(t, "bin.dat", "foo\x00bar\n")
	m := func(p string, line int, text string) contracts.GrepMatch {
		return contracts.GrepMatch{Path: p, Line: line, Text: text}
	}
	tests := []struct {
		name      string
		req       contracts.GrepRequest
		want      []contracts.GrepMatch
		truncated bool
	}{
		{"all files, sorted, binary skipped", contracts.GrepRequest{Pattern: "foo"},
			[]contracts.GrepMatch{m("a.go", 2, "// foo"), m("b.txt", 1, "foo"), m("b.txt", 3, "foo bar"), m("sub/c.go", 1, "foo()")}, false},
		{"under a path", contracts.GrepRequest{Pattern: "foo", Path: "sub"},
			[]contracts.GrepMatch{m("sub/c.go", 1, "foo()")}, false},
		{"one file", contracts.GrepRequest{Pattern: "foo", Path: "b.txt"},
			[]contracts.GrepMatch{m("b.txt", 1, "foo"), m("b.txt", 3, "foo bar")}, false},
		{"glob filter", contracts.GrepRequest{Pattern: "foo", Glob: "**/*.go"},
			[]contracts.GrepMatch{m("a.go", 2, "// foo"), m("sub/c.go", 1, "foo()")}, false},
		{"regexp", contracts.GrepRequest{Pattern: `^fo+ ba[rz]$`},
			[]contracts.GrepMatch{m("b.txt", 3, "foo bar")}, false},
		{"max matches", contracts.GrepRequest{Pattern: "foo", MaxMatches: 2},
			[]contracts.GrepMatch{m("a.go", 2, "// foo"), m("b.txt", 1, "foo")}, true},
		{"exactly max matches", contracts.GrepRequest{Pattern: "foo", MaxMatches: 4},
			[]contracts.GrepMatch{m("a.go", 2, "// foo"), m("b.txt", 1, "foo"), m("b.txt", 3, "foo bar"), m("sub/c.go", 1, "foo()")}, false},
		{"no match", contracts.GrepRequest{Pattern: "absent"}, nil, false},
	}
	for _, tc := range tests {
		got, err := s.api.Grep(s.ctx, tc.req)
		noErr(t, tc.name, err)
		if fmt.Sprint(got.Matches) != fmt.Sprint(tc.want) && !(len(got.Matches) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: matches = %+v, want %+v", tc.name, got.Matches, tc.want)
		}
		if got.Truncated != tc.truncated {
			t.Errorf("%s: truncated = %v, want %v", tc.name, got.Truncated, tc.truncated)
		}
	}
}

func testGrepErrors(t *testing.T, s *suite) {
	s.put(t, "f.txt", "x")
	_, err := s.api.Grep(s.ctx, contracts.GrepRequest{Pattern: ""})
	wantErr(t, "empty pattern", err, contracts.ErrInvalid)
	_, err = s.api.Grep(s.ctx, contracts.GrepRequest{Pattern: "("})
	wantErr(t, "invalid regexp", err, contracts.ErrInvalid)
	_, err = s.api.Grep(s.ctx, contracts.GrepRequest{Pattern: "x", Path: "missing"})
	wantErr(t, "missing path", err, contracts.ErrNotFound)
}
