// Package docs_test keeps the documentation honest: `make test` (go test
// ./...) fails when the placement table of docs/ARCHITECTURE.md names a
// path that does not exist, when a package imports a cairn package its doc
// comment does not allow, or when a production binary links what it must
// not (the test kit; in a Lambda, the embedded SQLite backend).
//
// The import claim is one sentence of the package comment — in doc.go for a
// library package, in main.go for a command:
//
//	It may import shared/contracts, shared/sandbox/... and the standard library.
//
// Cairn packages are written as paths relative to the module root
// (client, shared/x/y; a trailing /... covers a subtree); anything else in the list
// (the standard library, third-party modules) is plain words and not
// checked. A parenthesised note after an item is allowed. "It may import
// only the standard library." allows no cairn package; "It may import
// nothing." allows no import at all (a folder holding only doc.go).
package docs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/cairnrun/cairn"

// claimRequired are the trees whose every package must state its imports.
var claimRequired = []string{"client/", "shared/", "cmd/", "functions/"}

// lambdaEnv is how `make functions` builds the function binaries.
var (
	lambdaEnv  = []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}
	lambdaTags = "lambda.norpc"
)

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

// rel is the package's path relative to the module root ("" outside it).
func rel(importPath string) string {
	if importPath == module {
		return "."
	}
	if r, ok := strings.CutPrefix(importPath, module+"/"); ok {
		return r
	}
	return ""
}

// root is the module root: docs/ is one level below it.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root not found above docs/: %v", err)
	}
	return dir
}

// goList runs `go list -json=<fields> args...` in the module root with env
// added to the environment and decodes the packages it prints.
func goList(dir string, env []string, args ...string) ([]pkg, error) {
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Name,Dir,GoFiles,Imports,Deps"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&stdout)
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list %s: decoding its output: %v", strings.Join(args, " "), err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

var (
	moduleOnce sync.Once
	modulePkgs []pkg
	moduleErr  error
)

// modulePackages is `go list ./...` of the module (host build), run once.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	dir := root(t)
	moduleOnce.Do(func() { modulePkgs, moduleErr = goList(dir, nil, "./...") })
	if moduleErr != nil {
		t.Fatal(moduleErr)
	}
	return modulePkgs
}

// chain returns "a → b → c": how from imports to (a package for which
// target is true), over the import graph in pkgs; nil if it does not.
func chain(pkgs map[string]pkg, from string, target func(string) bool) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if target(cur) {
			var path []string
			for p := cur; p != ""; p = prev[p] {
				path = append(path, short(p))
			}
			slices.Reverse(path)
			return path
		}
		for _, imp := range pkgs[cur].Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

// short is an import path as the docs write it: relative for cairn's.
func short(importPath string) string {
	if r := rel(importPath); r != "" {
		return r
	}
	return importPath
}
