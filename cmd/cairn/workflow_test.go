package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `cairn workflow run` end to end on the embedded backend, each evaluation
// in a real `cairn isolate` process.
func TestWorkflowRunCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data := t.TempDir()
	fan := write("fan.star", `def main(input):
    rs = wait([start("part " + p, model="scripted:plain", key=p) for p in input["parts"]])
    return [r.ok for r in rs]
`)
	out, code := cairn(t, "workflow", "run", fan, "--data", data, "--input", `{"parts":["a","b"]}`)
	if code != 0 || strings.Count(out, "▶ node") != 2 || strings.Count(out, "✓ node") != 2 || !strings.Contains(out, "succeeded after 2 nodes: [true,true]") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	cases := []struct{ name, src, want string }{
		{"syntax.star", "result = (\n", "syntax:2:1"},
		{"names.star", "result = os.environ\n", "undefined: os"},
		{"loop.star", "n = 0\nfor i in range(1000000000):\n    n += i\nresult = n\n", "step limit"},
		{"huge.star", "result = \"x\" * 2000000\n", "too large"},
	}
	for _, c := range cases {
		out, code := cairn(t, "workflow", "run", write(c.name, c.src), "--data", data)
		if code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, want 1 and %q:\n%s", c.name, code, c.want, out)
		}
	}
	// The runtime is unharmed: the next run still succeeds.
	if out, code := cairn(t, "workflow", "run", fan, "--data", data, "--input", `{"parts":["c"]}`); code != 0 {
		t.Fatalf("after the failures: exit %d\n%s", code, out)
	}
}
