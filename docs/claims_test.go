package docs_test

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// b. every package's "It may import" sentence holds

func TestImportClaims(t *testing.T) {
	t.Parallel()
	pkgs := modulePackages(t)
	known := map[string]bool{}
	for _, p := range pkgs {
		known[rel(p.ImportPath)] = true
	}
	for _, p := range pkgs {
		r := rel(p.ImportPath)
		if r == "" {
			continue
		}
		required := false
		for _, prefix := range claimRequired {
			required = required || strings.HasPrefix(r+"/", prefix)
		}
		file := "doc.go"
		if p.Name == "main" {
			file = "main.go"
		}
		docFile := r + "/" + file
		for _, f := range p.GoFiles {
			if f == file {
				continue
			}
			if doc, err := packageDoc(filepath.Join(p.Dir, f)); err == nil && doc != "" {
				t.Errorf("%s: the package comment is in %s/%s; keep it in %s only (a library package documents itself in doc.go, a command in main.go)", r, r, f, docFile)
			}
		}
		if !slices.Contains(p.GoFiles, file) {
			if required {
				t.Errorf("%s has no %s; create %s with the package comment, including one 'It may import …' sentence (see docs/docs_test.go)", r, file, docFile)
			}
			continue
		}
		doc, err := packageDoc(filepath.Join(p.Dir, file))
		if err != nil {
			t.Errorf("%s: %v", docFile, err)
			continue
		}
		c, err := parseClaim(doc)
		if errors.Is(err, errNoClaim) && !required {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v; the package comment of %s needs one sentence 'It may import shared/…, … and the standard library.' (or 'It may import only the standard library.', or 'It may import nothing.')", r, err, docFile)
			continue
		}
		for _, pat := range c.paths {
			if !patternNamesPackage(pat, known) {
				t.Errorf("%s: its 'It may import' sentence lists %s, which is no package of the module; fix the sentence in %s", r, pat, docFile)
			}
		}
		if c.nothing {
			if len(p.Imports) > 0 {
				t.Errorf("%s claims 'It may import nothing' but imports %s; list them in the 'It may import' sentence of %s (or remove the imports)", r, strings.Join(shorts(p.Imports), ", "), docFile)
			}
			continue
		}
		for _, imp := range p.Imports {
			ir := rel(imp)
			if ir == "" || c.allows(ir) {
				continue
			}
			t.Errorf("%s imports %s but its %s claim does not list it; add it to the 'It may import' sentence in %s (or drop the import)", r, ir, file, docFile)
		}
	}
}

// filter returns the import paths for which keep is true, written short.
func filter(paths []string, keep func(string) bool) []string {
	var out []string
	for _, p := range paths {
		if keep(p) {
			out = append(out, short(p))
		}
	}
	return out
}

func shorts(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, short(p))
	}
	return out
}

// packageDoc returns the text of path's package comment ("" if none).
func packageDoc(path string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return "", err
	}
	if f.Doc == nil {
		return "", nil
	}
	return f.Doc.Text(), nil
}

// claim is a parsed "It may import …" sentence.
type claim struct {
	nothing bool     // "It may import nothing."
	paths   []string // cairn packages: "shared/x" or "shared/x/..."
	words   []string // everything else: the standard library, third-party modules
}

// allows reports whether the claim lists the cairn package r.
func (c claim) allows(r string) bool {
	for _, p := range c.paths {
		if sub, ok := strings.CutSuffix(p, "/..."); ok {
			if r == sub || strings.HasPrefix(r, sub+"/") {
				return true
			}
		} else if r == p {
			return true
		}
	}
	return false
}

func patternNamesPackage(pat string, known map[string]bool) bool {
	sub, tree := strings.CutSuffix(pat, "/...")
	if !tree {
		return known[pat]
	}
	for k := range known {
		if k == sub || strings.HasPrefix(k, sub+"/") {
			return true
		}
	}
	return false
}

var (
	errNoClaim  = errors.New("its package comment has no 'It may import' sentence")
	cairnPath   = regexp.MustCompile(`^(client|shared|cmd|functions)(/[a-z0-9_]+)*(/\.\.\.)?$`)
	cairnPrefix = regexp.MustCompile(`\b(shared|cmd|functions)/`)
)

const claimStart = "It may import "

// parseClaim finds the one "It may import …" sentence in a package comment.
func parseClaim(doc string) (claim, error) {
	text := strings.Join(strings.Fields(doc), " ")
	switch n := strings.Count(text, claimStart); {
	case n == 0:
		return claim{}, errNoClaim
	case n > 1:
		return claim{}, fmt.Errorf("its package comment has %d 'It may import' sentences; keep one", n)
	}
	rest := text[strings.Index(text, claimStart)+len(claimStart):]
	// The sentence ends at the first word ending in a period that is not
	// the "..." of a subtree ("shared/x/...." ends one).
	var list []string
	ended := false
	for _, w := range strings.Fields(rest) {
		if strings.HasSuffix(w, ".") && (!strings.HasSuffix(w, "/...") || strings.HasSuffix(w, "/....")) {
			list = append(list, strings.TrimSuffix(w, "."))
			ended = true
			break
		}
		list = append(list, w)
	}
	if !ended {
		return claim{}, errors.New("its 'It may import' sentence does not end with a period")
	}
	body := strings.Join(list, " ")
	if body == "nothing" {
		return claim{nothing: true}, nil
	}
	var c claim
	for _, item := range splitList(body) {
		item = strings.TrimSpace(stripParens(item))
		item = strings.TrimSpace(strings.TrimPrefix(item, "only "))
		switch {
		case item == "":
			return claim{}, fmt.Errorf("its 'It may import' sentence has an empty item: %q", body)
		case cairnPath.MatchString(item):
			c.paths = append(c.paths, item)
		case cairnPrefix.MatchString(item):
			return claim{}, fmt.Errorf("its 'It may import' sentence has the item %q, which mixes a package path with other words; list bare paths (shared/x/y, or shared/x/... for a subtree) separated by commas and 'and', and end the sentence with a period before any further prose", item)
		default:
			c.words = append(c.words, item)
		}
	}
	return c, nil
}

// splitList splits "a, b, c and d" (and "a and b") into items, ignoring
// commas and "and" inside parentheses.
func splitList(s string) []string {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '(':
			depth++
		case s[i] == ')':
			depth--
		case depth == 0 && s[i] == ',':
			items = append(items, s[start:i])
			start = i + 1
		case depth == 0 && strings.HasPrefix(s[i:], " and ") && !strings.HasSuffix(s[:i], ","):
			items = append(items, s[start:i])
			start = i + len(" and ")
			i = start - 1
		}
	}
	items = append(items, s[start:])
	for i, it := range items {
		it = strings.TrimSpace(it)
		items[i] = strings.TrimSpace(strings.TrimPrefix(it, "and "))
	}
	return items
}

// stripParens removes parenthesised notes: "shared/x (for Scrub)" → "shared/x".
func stripParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth = max(depth-1, 0)
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
