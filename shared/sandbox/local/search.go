package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"syscall"
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

// walk visits every entry below the directory dir is opened on (workspace
// path wsDir), in lexical order, without following symlinks. fn gets the
// path relative to dir with forward slashes (prefix joined in front).
// Symlinks that resolve outside the workspace (or nowhere) are skipped; the
// others are reported but never descended into.
//
// A subdirectory is entered by opening it relative to its parent's
// descriptor (a nested os.Root, so nothing below can leave it) and only if
// the directory opened is the one Lstat saw: a directory swapped for a
// symlink in between is not entered, so no walk follows a symlink, inside
// the workspace or out.
func (l *Sandbox) walk(ctx context.Context, dir *os.Root, wsDir, prefix string, fn func(rel string, d fs.DirEntry) error) error {
	entries, err := readDir(dir)
	if err != nil {
		if prefix == "" {
			return err
		}
		return nil // unreadable or vanished directory: skip
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		rel := path.Join(prefix, name)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			// Listed only if it resolves inside the workspace. The check
			// decides whether a name is shown, never what is read.
			if _, err := l.ws.Stat(path.Join(wsDir, rel)); err != nil {
				continue
			}
			if err := fn(rel, e); err != nil {
				return err
			}
		case e.IsDir():
			if err := fn(rel, e); err != nil {
				return err
			}
			if err := l.descend(ctx, dir, name, wsDir, rel, fn); err != nil {
				return err
			}
		default:
			if err := fn(rel, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// descend walks subdirectory name of dir if it is still the directory it
// was (not a symlink swapped in).
func (l *Sandbox) descend(ctx context.Context, dir *os.Root, name, wsDir, rel string, fn func(rel string, d fs.DirEntry) error) error {
	before, err := dir.Lstat(name)
	if err != nil || !before.IsDir() {
		return nil
	}
	sub, err := dir.OpenRoot(name)
	if err != nil {
		return nil
	}
	defer sub.Close()
	after, err := sub.Stat(".")
	if err != nil || !os.SameFile(before, after) {
		return nil
	}
	return l.walk(ctx, sub, wsDir, rel, fn)
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
	baseRel, err := cleanRel(baseRel)
	if err != nil {
		return nil, err
	}
	dir, err := l.ws.OpenRoot(baseRel)
	if err != nil {
		if escapes(err) || (!errors.Is(err, fs.ErrNotExist) && !isNotDir(err)) {
			return nil, l.rootError("glob", baseRel, err)
		}
		return []string{}, nil
	}
	defer dir.Close()
	out := []string{}
	err = l.walk(ctx, dir, baseRel, "", func(rel string, _ fs.DirEntry) error {
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
	baseRel, err := cleanRel(r.Path)
	if err != nil {
		return contracts.GrepResult{}, err
	}
	fi, err := l.ws.Stat(baseRel)
	if err != nil {
		return contracts.GrepResult{}, l.rootError("grep", baseRel, err)
	}

	res := contracts.GrepResult{Matches: []contracts.GrepMatch{}}
	if !fi.IsDir() {
		// One file, named: a hard-linked one is refused (an error), while
		// one met in a walk is skipped.
		if _, err := l.grepFile(l.ws, baseRel, baseRel, re, maxMatches+1, &res.Matches, true); err != nil {
			return contracts.GrepResult{}, err
		}
		if len(res.Matches) > maxMatches {
			res.Matches = res.Matches[:maxMatches]
			res.Truncated = true
		}
		return res, nil
	}

	dir, err := l.ws.OpenRoot(baseRel)
	if err != nil {
		return contracts.GrepResult{}, l.rootError("grep", baseRel, err)
	}
	defer dir.Close()
	var files []string // relative to dir
	err = l.walk(ctx, dir, baseRel, "", func(rel string, d fs.DirEntry) error {
		if !d.Type().IsRegular() {
			return nil
		}
		if r.Glob != "" && !globMatch(r.Glob, path.Join(baseRel, rel)) {
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return contracts.GrepResult{}, l.pathError("grep", baseRel, err)
	}
	sort.Strings(files)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return contracts.GrepResult{}, err
		}
		full, err := l.grepFile(dir, f, path.Join(baseRel, f), re, maxMatches-len(res.Matches)+1, &res.Matches, false)
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

// grepFile appends up to budget matches of re in file name of dir (workspace
// path rel); it reports whether the budget was used up. Unreadable, binary
// and oversized files are skipped, and so are files with more than one hard
// link, unless named (then the link is an error).
func (l *Sandbox) grepFile(dir *os.Root, name, rel string, re *regexp.Regexp, budget int, out *[]contracts.GrepMatch, named bool) (bool, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if named && escapes(err) {
			return false, l.rootError("grep", rel, err)
		}
		return false, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxGrepFileSize {
		return false, nil
	}
	if err := singleLink("grep", rel, fi); err != nil {
		if named {
			return false, err
		}
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
