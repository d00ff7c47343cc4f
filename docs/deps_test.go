package docs_test

import (
	"strings"
	"testing"
)

// c. no production binary depends on the test kit
func TestProductionDoesNotLinkTestkit(t *testing.T) {
	t.Parallel()
	isRoot := func(r string) bool { return r == "cmd/cairn" || strings.HasPrefix(r, "functions/") }
	isTestkit := func(ip string) bool {
		r := rel(ip)
		return r == "shared/testkit" || strings.HasPrefix(r, "shared/testkit/")
	}
	forbidDeps(t, modulePackages(t), isRoot, isTestkit,
		"%s links the test kit: %s (through %s); production code must not depend on shared/testkit/...: move what it needs out of the test kit, or drop the import")
}

// d. no Lambda function binary links the embedded backend
func TestFunctionsDoNotLinkEmbedded(t *testing.T) {
	t.Parallel()
	// Resolved as `make functions` builds them: linux/arm64, no cgo, lambda.norpc.
	pkgs, err := goList(root(t), lambdaEnv, "-deps", "-tags", lambdaTags, "./functions/...")
	if err != nil {
		t.Fatal(err)
	}
	isRoot := func(r string) bool { return strings.HasPrefix(r, "functions/") }
	forbidden := func(ip string) bool {
		r := rel(ip)
		return r == "shared/embedded" || strings.HasPrefix(r, "shared/embedded/") ||
			ip == "modernc.org/sqlite" || strings.HasPrefix(ip, "modernc.org/sqlite/")
	}
	forbidDeps(t, pkgs, isRoot, forbidden,
		"%s (a function binary) links the embedded backend: %s (through %s); a function must not link shared/embedded/... or SQLite: keep shared/aws/... and whatever the function imports free of them")
}

// forbidDeps fails t for every root package (isRoot of its module-relative
// path) whose dependencies include a forbidden one, naming them and one
// import chain (msg gets the root, the forbidden packages and the chain).
func forbidDeps(t *testing.T, pkgs []pkg, isRoot func(string) bool, forbidden func(string) bool, msg string) {
	t.Helper()
	byPath := map[string]pkg{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	roots := 0
	for _, p := range pkgs {
		r := rel(p.ImportPath)
		if !isRoot(r) {
			continue
		}
		roots++
		if bad := filter(p.Deps, forbidden); len(bad) > 0 {
			via := chain(byPath, p.ImportPath, forbidden)
			t.Errorf(msg, r, strings.Join(bad, ", "), strings.Join(via, " → "))
		}
	}
	if roots == 0 {
		t.Errorf("no root package (cmd/cairn, functions/*) found; the check has nothing to check")
	}
}
