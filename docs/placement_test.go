package docs_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// a. the placement table of docs/ARCHITECTURE.md names paths that exist

func TestPlacementTablePathsExist(t *testing.T) {
	t.Parallel()
	dir := root(t)
	md, err := os.ReadFile(filepath.Join(dir, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := placementRows(string(md))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, row := range rows {
		for _, ref := range row.paths {
			for _, p := range expand(ref) {
				checked++
				if !exists(dir, p) {
					what := "does not exist"
					if p != ref {
						what = fmt.Sprintf("(from `%s`) does not exist", ref)
					}
					if strings.ContainsAny(p, "*?[") {
						what = strings.Replace(what, "does not exist", "matches nothing", 1)
					}
					t.Errorf("docs/ARCHITECTURE.md placement table, row %q: %s %s; fix the path in that row (or restore the file)", row.label, p, what)
				}
			}
		}
	}
	if checked == 0 {
		t.Errorf("docs/ARCHITECTURE.md: the section headed \"## Placement table\" names no path in backticks; the check found nothing to check")
	}
}

// exists reports whether the repository path p (a glob when it has
// metacharacters) names at least one file or directory under dir.
func exists(dir, p string) bool {
	full := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, "/")))
	if strings.ContainsAny(p, "*?[") {
		m, err := filepath.Glob(full)
		return err == nil && len(m) > 0
	}
	_, err := os.Stat(full)
	return err == nil
}

// placementRow is one row of the placement table: its first cell and the
// repository paths named in backticks anywhere in it.
type placementRow struct {
	label string
	paths []string
}

// placementRows reads the table of the section headed "## Placement table".
func placementRows(md string) ([]placementRow, error) {
	var rows []placementRow
	in, found := false, false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Placement table")
			found = found || in
			continue
		}
		line = strings.TrimSpace(line)
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := splitRow(line)
		if len(cells) == 0 || isSeparator(cells) {
			continue
		}
		row := placementRow{label: cells[0]}
		for _, c := range cells {
			row.paths = append(row.paths, cellPaths(c)...)
		}
		rows = append(rows, row)
	}
	if !found {
		return nil, errors.New(`docs/ARCHITECTURE.md has no section headed "## Placement table"; the docs test checks the paths of that table`)
	}
	if len(rows) > 0 {
		rows = rows[1:] // the header row
	}
	return rows, nil
}

// splitRow splits a Markdown table row into trimmed cells; \| is a pipe
// inside a cell.
func splitRow(line string) []string {
	line = strings.ReplaceAll(line, `\|`, "\x00")
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	for _, c := range strings.Split(line, "|") {
		cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")))
	}
	return cells
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" {
			return false
		}
	}
	return true
}

var backticked = regexp.MustCompile("`([^`]+)`")

// cellPaths returns the repository paths named in backticks in one cell. A
// span is a path when it contains a "/" or ends in .go or .md and holds no
// space (`Driver.Repair`, `Default*` or a command line are not paths). A
// bare file name (`registry.go` in "(+ `registry.go`)") is relative to the
// directory of the path before it in the cell, and no path without one.
func cellPaths(cell string) []string {
	var paths []string
	base := ""
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		s := m[1]
		if strings.ContainsAny(s, " \t") {
			continue
		}
		isFile := strings.HasSuffix(s, ".go") || strings.HasSuffix(s, ".md")
		if !strings.Contains(s, "/") && !isFile {
			continue
		}
		if !strings.Contains(s, "/") {
			if base == "" {
				continue // a file name in prose, not a repository path
			}
			s = base + "/" + s
		}
		paths = append(paths, s)
		base = strings.TrimSuffix(s, "/")
		if last := base[strings.LastIndex(base, "/")+1:]; strings.Contains(last, ".") || strings.ContainsAny(last, "{<*") {
			base = base[:max(strings.LastIndex(base, "/"), 0)]
		}
	}
	return paths
}

var placeholder = regexp.MustCompile(`<[^<>/]+>`)

// expand turns a documented path into globs: each {a,b,c} brace list
// becomes one path per alternative (lists may repeat and nest), and each
// <name> placeholder becomes *.
func expand(p string) []string {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		return []string{placeholder.ReplaceAllString(p, "*")}
	}
	depth, end := 0, -1
	var alts []string
	start := open + 1
	for i := open; i < len(p) && end < 0; i++ {
		switch p[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				alts = append(alts, p[start:i])
				end = i
			}
		case ',':
			if depth == 1 {
				alts = append(alts, p[start:i])
				start = i + 1
			}
		}
	}
	if end < 0 { // unbalanced: keep the brace as a literal
		return []string{placeholder.ReplaceAllString(p, "*")}
	}
	var out []string
	for _, a := range alts {
		out = append(out, expand(p[:open]+a+p[end+1:])...)
	}
	return out
}
