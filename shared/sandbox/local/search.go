package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Grep limits.
const (
	DefaultMaxMatches = 200
	maxGrepFileSize   = 4 << 20 // larger files are skipped
	binarySniffSize   = 8 << 10 // a NUL in the first 8 KiB marks a binary file
	maxGrepLineLen    = 1000    // longer matching lines are cut
)

// walk visits every entry below the resolved host directory base (not base
// itself), in lexical order, without following symlinks. fn gets the path
// relative to base with forward slashes. Symlinks that resolve outside the
// workspace (or nowhere) are skipped; the others are reported but never
// descended into.
func (l *Sandbox) walk(ctx context.Context, base string, fn func(rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == base {
				return err
			}
			return nil // unreadable or vanished entry: skip
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == base {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(p)
			if err != nil || !within(l.root, real) {
				return nil
			}
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return nil
		}
		return fn(filepath.ToSlash(rel), d)
	})
}

// Glob returns the workspace paths matching a doublestar pattern (`**`
// matches any number of directories), sorted. The literal directory prefix of
// the pattern is resolved like any path (confined); below it nothing is
// followed through symlinks, and symlinks escaping the workspace are never
// listed.
func (l *Sandbox) Glob(ctx context.Context, pattern string) ([]string, error) {
	if pattern == "" {
		return nil, fmt.Errorf("glob: empty pattern: %w", contracts.ErrInvalid)
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, fmt.Errorf("glob: invalid pattern %q: %w", pattern, contracts.ErrInvalid)
	}
	baseRel, rest := doublestar.SplitPattern(pattern)
	if baseRel == "/" {
		return nil, fmt.Errorf("glob: pattern %q is absolute; patterns are relative to the workspace: %w", pattern, contracts.ErrPermission)
	}
	host, baseRel, err := l.resolve(baseRel)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(host); err != nil || !fi.IsDir() {
		return []string{}, nil
	}
	out := []string{}
	err = l.walk(ctx, host, func(rel string, _ fs.DirEntry) error {
		if doublestar.MatchUnvalidated(rest, rel) {
			out = append(out, path.Join(baseRel, rel))
		}
		return nil
	})
	if err != nil {
		return nil, l.pathError("glob", pattern, err)
	}
	sort.Strings(out)
	return out, nil
}

// Grep searches regular text files under Path (a directory or one file) for
// the RE2 Pattern. Glob filters files: a pattern without "/" matches the
// base name (like ripgrep), one with "/" the workspace path. Binary files and
// files over 4 MiB are skipped; symlinks are not followed. Matches are sorted
// by path then line; MaxMatches (default 200) bounds them (Truncated).
func (l *Sandbox) Grep(ctx context.Context, r contracts.GrepRequest) (contracts.GrepResult, error) {
	if r.Pattern == "" {
		return contracts.GrepResult{}, fmt.Errorf("grep: empty pattern: %w", contracts.ErrInvalid)
	}
	re, err := regexp.Compile(r.Pattern)
	if err != nil {
		return contracts.GrepResult{}, fmt.Errorf("grep: invalid pattern %q: %v: %w", r.Pattern, err, contracts.ErrInvalid)
	}
	if r.Glob != "" && !doublestar.ValidatePattern(r.Glob) {
		return contracts.GrepResult{}, fmt.Errorf("grep: invalid glob %q: %w", r.Glob, contracts.ErrInvalid)
	}
	if r.MaxMatches < 0 {
		return contracts.GrepResult{}, fmt.Errorf("grep: negative max matches: %w", contracts.ErrInvalid)
	}
	maxMatches := r.MaxMatches
	if maxMatches == 0 {
		maxMatches = DefaultMaxMatches
	}
	host, baseRel, err := l.resolve(r.Path)
	if err != nil {
		return contracts.GrepResult{}, err
	}
	fi, err := os.Stat(host)
	if err != nil {
		return contracts.GrepResult{}, l.pathError("grep", baseRel, err)
	}

	type file struct{ rel, host string }
	var files []file
	if fi.IsDir() {
		err = l.walk(ctx, host, func(rel string, d fs.DirEntry) error {
			if !d.Type().IsRegular() {
				return nil
			}
			wsRel := path.Join(baseRel, rel)
			if r.Glob != "" && !globMatch(r.Glob, wsRel) {
				return nil
			}
			files = append(files, file{wsRel, filepath.Join(host, filepath.FromSlash(rel))})
			return nil
		})
		if err != nil {
			return contracts.GrepResult{}, l.pathError("grep", baseRel, err)
		}
		sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	} else {
		files = []file{{baseRel, host}}
	}

	res := contracts.GrepResult{Matches: []contracts.GrepMatch{}}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return contracts.GrepResult{}, err
		}
		full, err := l.grepFile(f.host, f.rel, re, maxMatches-len(res.Matches)+1, &res.Matches)
		if err != nil {
			return contracts.GrepResult{}, err
		}
		if full {
			res.Matches = res.Matches[:maxMatches]
			res.Truncated = true
			break
		}
	}
	return res, nil
}

// globMatch applies a grep file filter to workspace path rel.
func globMatch(glob, rel string) bool {
	if !strings.Contains(glob, "/") {
		return doublestar.MatchUnvalidated(glob, path.Base(rel))
	}
	return doublestar.MatchUnvalidated(glob, rel)
}

// grepFile appends up to budget matches of re in one file; it reports whether
// the budget was used up. Unreadable, binary and oversized files are skipped.
func (l *Sandbox) grepFile(host, rel string, re *regexp.Regexp, budget int, out *[]contracts.GrepMatch) (bool, error) {
	f, err := os.OpenFile(host, readFlags, 0)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxGrepFileSize {
		return false, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGrepFileSize+1))
	if err != nil || len(data) > maxGrepFileSize {
		return false, nil
	}
	if bytes.IndexByte(data[:min(len(data), binarySniffSize)], 0) >= 0 {
		return false, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxGrepFileSize+1)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Bytes()
		if !re.Match(text) {
			continue
		}
		*out = append(*out, contracts.GrepMatch{Path: rel, Line: line, Text: cutLine(text)})
		budget--
		if budget == 0 {
			return true, nil
		}
	}
	return false, nil
}

// cutLine trims a trailing CR and cuts very long lines at a rune boundary.
func cutLine(b []byte) string {
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) <= maxGrepLineLen {
		return string(b)
	}
	keep := maxGrepLineLen
	for keep > 0 && !utf8.RuneStart(b[keep]) {
		keep--
	}
	return string(b[:keep]) + "…"
}
