package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
)

var allTools = []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "bash", "python"}

// env is a toolset bound to every built-in tool over a fresh local sandbox.
type env struct {
	ts   contracts.Toolset
	root string
}

func newEnv(t testing.TB, outputCap int) *env {
	t.Helper()
	root := t.TempDir()
	sb, err := local.New(root, local.Options{Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []contracts.ToolConfig
	for _, n := range allTools {
		cfgs = append(cfgs, contracts.ToolConfig{Name: n})
	}
	ts, err := NewRegistry().Bind(cfgs, contracts.Binding{Sandbox: sb, SessionID: "s1", OutputCap: outputCap})
	if err != nil {
		t.Fatal(err)
	}
	return &env{ts: ts, root: root}
}

func (e *env) put(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(e.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) content(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, rel))
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

func (e *env) call(t *testing.T, name, input string) contracts.ToolResult {
	t.Helper()
	res, err := e.ts.Call(t.Context(), contracts.ToolCall{ID: "call-" + name, Name: name, Input: json.RawMessage(input)})
	if err != nil {
		t.Fatalf("%s %s: %v", name, input, err)
	}
	if res.CallID != "call-"+name {
		t.Errorf("%s: CallID = %q", name, res.CallID)
	}
	return res
}

// toolCase is one call and the exact result it must give.
type toolCase struct {
	name, tool, input string
	want              string
	isError           bool
}

func runCases(t *testing.T, e *env, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := e.call(t, tc.tool, tc.input)
			if res.Content != tc.want || res.IsError != tc.isError {
				t.Errorf("got %q (IsError %v), want %q (IsError %v)", res.Content, res.IsError, tc.want, tc.isError)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	e := newEnv(t, 0)
	e.put(t, "notes.txt", "hello\nworld\n")
	e.put(t, "empty.txt", "")
	e.put(t, "bin.dat", "a\x00b")
	e.put(t, "dir/x", "")
	runCases(t, e, []toolCase{
		{"whole", "read_file", `{"path":"notes.txt"}`, "hello\nworld\n", false},
		{"offset", "read_file", `{"path":"notes.txt","offset":6}`, "world\n", false},
		{"limit", "read_file", `{"path":"notes.txt","limit":5}`, "hello\n[showing bytes 0-5 of 12; continue with offset 5]", false},
		{"limit after a newline", "read_file", `{"path":"notes.txt","limit":6}`, "hello\n[showing bytes 0-6 of 12; continue with offset 6]", false},
		{"integral float", "read_file", `{"path":"notes.txt","offset":6.0}`, "world\n", false},
		{"empty", "read_file", `{"path":"empty.txt"}`, "(empty file)", false},
		{"past end", "read_file", `{"path":"notes.txt","offset":99}`, "(nothing at offset 99: notes.txt is 12 bytes)", false},
		{"binary", "read_file", `{"path":"bin.dat"}`, "(bin.dat is a binary file of 3 bytes; not shown)", false},
		{"missing", "read_file", `{"path":"nope.txt"}`, "reading nope.txt: no such file or directory: not found", true},
		{"directory", "read_file", `{"path":"dir"}`, "reading dir: is a directory: invalid input", true},
	})
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t, 0)
	runCases(t, e, []toolCase{
		{"create", "write_file", `{"path":"notes.txt","content":"hello world\n"}`, "wrote 12 bytes to notes.txt", false},
		{"append", "write_file", `{"path":"notes.txt","content":"more\n","append":true}`, "appended 5 bytes to notes.txt", false},
		{"nested", "write_file", `{"path":"a/b/c.txt","content":""}`, "wrote 0 bytes to a/b/c.txt", false},
		{"over a dir", "write_file", `{"path":"a","content":"x"}`, "writing a: is a directory: invalid input", true},
	})
	if got := e.content(t, "notes.txt"); got != "hello world\nmore\n" {
		t.Errorf("notes.txt = %q", got)
	}
	if got := e.content(t, "a/b/c.txt"); got != "" {
		t.Errorf("a/b/c.txt = %q", got)
	}
}

func TestEditFile(t *testing.T) {
	e := newEnv(t, 0)
	e.put(t, "f.txt", "one two one\n")
	runCases(t, e, []toolCase{
		{"ambiguous", "edit_file", `{"path":"f.txt","old_string":"one","new_string":"1"}`,
			"editing f.txt: old string occurs 2 times; make it unique or replace all: invalid input", true},
		{"not found", "edit_file", `{"path":"f.txt","old_string":"three","new_string":"3"}`, "editing f.txt: old string not found: invalid input", true},
		{"identical", "edit_file", `{"path":"f.txt","old_string":"two","new_string":"two"}`, "old_string and new_string are identical; nothing to change", true},
		{"once", "edit_file", `{"path":"f.txt","old_string":"two","new_string":"2"}`, "replaced 1 occurrence in f.txt", false},
		{"all", "edit_file", `{"path":"f.txt","old_string":"one","new_string":"1","replace_all":true}`, "replaced 2 occurrences in f.txt", false},
		{"missing", "edit_file", `{"path":"g.txt","old_string":"a","new_string":"b"}`, "editing g.txt: no such file or directory: not found", true},
	})
	if got := e.content(t, "f.txt"); got != "1 2 1\n" {
		t.Errorf("f.txt = %q", got)
	}
}

func TestListDir(t *testing.T) {
	e := newEnv(t, 0)
	e.put(t, "b.txt", "")
	e.put(t, "a.txt", "")
	e.put(t, "sub/c.txt", "")
	if err := os.Mkdir(filepath.Join(e.root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	runCases(t, e, []toolCase{
		{"default", "list_dir", `{}`, "a.txt\nb.txt\nempty/\nsub/", false},
		{"empty input", "list_dir", ``, "a.txt\nb.txt\nempty/\nsub/", false},
		{"dot", "list_dir", `{"path":"."}`, "a.txt\nb.txt\nempty/\nsub/", false},
		{"sub", "list_dir", `{"path":"sub"}`, "c.txt", false},
		{"empty dir", "list_dir", `{"path":"empty"}`, "(empty directory)", false},
		{"missing", "list_dir", `{"path":"nope"}`, "listing nope: no such file or directory: not found", true},
	})
}

func TestGlob(t *testing.T) {
	e := newEnv(t, 0)
	for _, f := range []string{"a.go", "b.txt", "sub/c.go"} {
		e.put(t, f, "")
	}
	runCases(t, e, []toolCase{
		{"recursive", "glob", `{"pattern":"**/*.go"}`, "a.go\nsub/c.go", false},
		{"top", "glob", `{"pattern":"*"}`, "a.go\nb.txt\nsub", false},
		{"none", "glob", `{"pattern":"*.rs"}`, "no files match *.rs", false},
		{"bad pattern", "glob", `{"pattern":"["}`, `glob: invalid pattern "[": invalid input`, true},
	})
}

func TestGrep(t *testing.T) {
	e := newEnv(t, 0)
	e.put(t, "a.go", "package a\nfunc Foo() {}\n")
	e.put(t, "sub/b.txt", "foo\nFoo bar\n")
	runCases(t, e, []toolCase{
		{"all", "grep", `{"pattern":"Foo"}`, "a.go:2:func Foo() {}\nsub/b.txt:2:Foo bar", false},
		{"case-insensitive", "grep", `{"pattern":"(?i)^foo"}`, "sub/b.txt:1:foo\nsub/b.txt:2:Foo bar", false},
		{"path", "grep", `{"pattern":"Foo","path":"sub"}`, "sub/b.txt:2:Foo bar", false},
		{"glob", "grep", `{"pattern":"Foo","glob":"*.go"}`, "a.go:2:func Foo() {}", false},
		{"none", "grep", `{"pattern":"zzz"}`, "no matches", false},
		{"bad regexp", "grep", `{"pattern":"("}`, "grep: invalid pattern \"(\": error parsing regexp: missing closing ): `(`: invalid input", true},
	})
	var many strings.Builder
	for range 250 {
		many.WriteString("hit\n")
	}
	e.put(t, "many.txt", many.String())
	res := e.call(t, "grep", `{"pattern":"hit"}`)
	if !strings.HasSuffix(res.Content, "many.txt:200:hit\n[match limit reached: showing the first 200 matches]") {
		t.Errorf("limit: ...%q", res.Content[max(0, len(res.Content)-120):])
	}
}

func TestBash(t *testing.T) {
	e := newEnv(t, 0)
	runCases(t, e, []toolCase{
		{"stdout", "bash", `{"command":"echo hi"}`, "hi\n", false},
		{"no output", "bash", `{"command":"true"}`, "(no output)", false},
		{"stderr and exit", "bash", `{"command":"echo out; echo err >&2; exit 2"}`, "out\n[stderr]\nerr\n[exit code 2]", true},
		{"no newline", "bash", `{"command":"printf out; printf err >&2"}`, "out\n[stderr]\nerr", false},
		{"exit only", "bash", `{"command":"exit 1"}`, "[exit code 1]", true},
		{"writes", "bash", `{"command":"echo x > made.txt && cat made.txt","timeout_seconds":30}`, "x\n", false},
		{"never ends", "bash", `{"command":"sleep 100000","timeout_seconds":1}`, "[timed out]", true},
	})
}

func TestPython(t *testing.T) {
	e := newEnv(t, 0)
	if res := e.call(t, "bash", `{"command":"command -v python3"}`); res.IsError {
		t.Skip("python3 not available")
	}
	runCases(t, e, []toolCase{
		{"print", "python", `{"code":"print(6*7)"}`, "42\n", false},
		{"exit", "python", `{"code":"import sys\nprint('a')\nsys.exit(3)"}`, "a\n[exit code 3]", true},
		{"never ends", "python", `{"code":"import time\ntime.sleep(100000)","timeout_seconds":1}`, "[timed out]", true},
	})
	res := e.call(t, "python", `{"code":"raise ValueError('boom')"}`)
	if !res.IsError || !strings.Contains(res.Content, "[stderr]\nTraceback") || !strings.Contains(res.Content, "ValueError: boom") || !strings.HasSuffix(res.Content, "[exit code 1]") {
		t.Errorf("traceback: %q", res.Content)
	}
}
