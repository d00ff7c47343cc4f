package docs_test

import (
	"fmt"
	"slices"
	"testing"
)

// the parsers themselves

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"shared/journal", []string{"shared/journal"}},
		{"localstack/", []string{"localstack/"}},
		{"shared/turn/{accept,model,tools}.go", []string{"shared/turn/accept.go", "shared/turn/model.go", "shared/turn/tools.go"}},
		{"functions/<name>/main.go", []string{"functions/*/main.go"}},
		{"shared/tools/<tool>.go", []string{"shared/tools/*.go"}},
		{"shared/{a,b}/{x,y}.go", []string{"shared/a/x.go", "shared/a/y.go", "shared/b/x.go", "shared/b/y.go"}},
		{"shared/{aws/dynamo,embedded/sqlite}/workflow*.go", []string{"shared/aws/dynamo/workflow*.go", "shared/embedded/sqlite/workflow*.go"}},
		{"shared/{a,{b,c}/d}", []string{"shared/a", "shared/b/d", "shared/c/d"}},
		{"shared/<x>/{p,q}", []string{"shared/*/p", "shared/*/q"}},
		{"shared/{oops", []string{"shared/{oops"}},
	} {
		if got := expand(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCellPaths(t *testing.T) {
	for _, tc := range []struct {
		cell string
		want []string
	}{
		{"`shared/journal`", []string{"shared/journal"}},
		{"`shared/turn/engine.go` (`tripped`, `Default*`)", []string{"shared/turn/engine.go"}},
		{"`shared/repair/runs.go` (`Driver.Repair`), wired by `assemble.New`", []string{"shared/repair/runs.go"}},
		{"`shared/sandbox/server` (+ `functions/sandboxd/{main.go,Dockerfile}`)", []string{"shared/sandbox/server", "functions/sandboxd/{main.go,Dockerfile}"}},
		{"`shared/tools/<tool>.go` (+ `registry.go`)", []string{"shared/tools/<tool>.go", "shared/tools/registry.go"}},
		{"`shared/aws/dynamo` (key schema in its `doc.go`)", []string{"shared/aws/dynamo", "shared/aws/dynamo/doc.go"}},
		{"`infra/stack/*.go`, `docs/DEPLOY.md`", []string{"infra/stack/*.go", "docs/DEPLOY.md"}},
		{"retries of its own (use `shared/model/retry`), key reading", []string{"shared/model/retry"}},
		{"`go list -deps ./functions/model`, the `process` kind", nil},
		{"this table's paths, `doc.go` import claims", nil},
	} {
		if got := cellPaths(tc.cell); !slices.Equal(got, tc.want) {
			t.Errorf("cellPaths(%q) = %q, want %q", tc.cell, got, tc.want)
		}
	}
}

func TestPlacementRows(t *testing.T) {
	md := "## Other\n| a | `shared/no` |\n" +
		"## Placement table — to change X, edit Y\n\n" +
		"| to change… | edit | what must not go there |\n|---|---|---|\n" +
		"| phase rules | `shared/journal` | backend code |\n" +
		"| a \\| pipe | `shared/{a,b}` (+ `x.go`) | |\n" +
		"\n## Next\n| b | `shared/never` |\n"
	rows, err := placementRows(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []placementRow{
		{"phase rules", []string{"shared/journal"}},
		{"a | pipe", []string{"shared/{a,b}", "shared/x.go"}},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("placementRows = %v, want %v", rows, want)
	}
	if _, err := placementRows("# nothing here\n"); err == nil {
		t.Error("placementRows of a page without the section: no error")
	}
}

func TestParseClaim(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		nothing bool
		paths   []string
		err     bool
	}{
		{doc: "Package x does y.\n\nIt may import shared/contracts, shared/journal and the standard library.\n", paths: []string{"shared/contracts", "shared/journal"}},
		{doc: "It may import only the standard library.", paths: nil},
		{doc: "It may import only the standard library and the AWS SDK. Then more.", paths: nil},
		{doc: "Holds no code. It may import nothing.", nothing: true},
		{doc: "It may import shared/contracts,\nshared/sandbox/local (for Scrub, and only that) and\nshared/sandbox/....", paths: []string{"shared/contracts", "shared/sandbox/local", "shared/sandbox/..."}},
		{doc: "It may import shared/sandbox/... and the standard library.", paths: []string{"shared/sandbox/..."}},
		{doc: "It may import shared/a, shared/b, and golang.org/x/sys.", paths: []string{"shared/a", "shared/b"}},
		{doc: "It imports shared/contracts.", err: true},
		{doc: "It may import shared/contracts", err: true},
		{doc: "It may import shared/contracts; never shared/x.", err: true},
		{doc: "It may import shared/a. It may import shared/b.", err: true},
	} {
		c, err := parseClaim(tc.doc)
		if (err != nil) != tc.err {
			t.Errorf("parseClaim(%q): error %v, want error: %v", tc.doc, err, tc.err)
			continue
		}
		if err == nil && (c.nothing != tc.nothing || !slices.Equal(c.paths, tc.paths)) {
			t.Errorf("parseClaim(%q) = nothing %v, paths %q; want nothing %v, paths %q", tc.doc, c.nothing, c.paths, tc.nothing, tc.paths)
		}
	}
	c := claim{paths: []string{"shared/contracts", "shared/sandbox/..."}}
	for r, want := range map[string]bool{"shared/contracts": true, "shared/sandbox": true, "shared/sandbox/local": true, "shared/sandboxes": false, "shared/contracts/x": false} {
		if c.allows(r) != want {
			t.Errorf("claim %v allows(%q) = %v, want %v", c.paths, r, !want, want)
		}
	}
}
