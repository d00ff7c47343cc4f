package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
)

func TestBadInput(t *testing.T) {
	e := newEnv(t, 0)
	if err := os.Symlink("/etc", filepath.Join(e.root, "etc")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(e.root, "out")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, input string
		want              string // substring of the IsError content
	}{
		{"malformed JSON", "read_file", `{"path":`, "invalid input for tool read_file: malformed JSON"},
		{"trailing data", "read_file", `{"path":"a"} x`, "malformed JSON"},
		{"not an object", "read_file", `["a"]`, "input: got array, want object"},
		{"null", "bash", `null`, "input: got null, want object"},
		{"unknown field", "read_file", `{"path":"a","mode":"x"}`, "additional properties 'mode' not allowed"},
		{"missing required", "write_file", `{"path":"a"}`, "input: missing property 'content'"},
		{"missing all required", "edit_file", `{}`, "missing properties 'path', 'old_string', 'new_string'"},
		{"wrong type", "write_file", `{"path":"a","content":7}`, "content: got number, want string"},
		{"wrong bool type", "write_file", `{"path":"a","content":"x","append":"yes"}`, "append: got string, want boolean"},
		{"negative offset", "read_file", `{"path":"a","offset":-1}`, "offset: minimum"},
		{"zero limit", "read_file", `{"path":"a","limit":0}`, "limit: minimum"},
		{"fractional", "bash", `{"command":"true","timeout_seconds":1.5}`, "timeout_seconds: got number, want integer"},
		{"timeout zero", "bash", `{"command":"true","timeout_seconds":0}`, "timeout_seconds: minimum"},
		{"timeout too long", "python", `{"code":"1","timeout_seconds":601}`, "timeout_seconds: maximum"},
		{"empty command", "bash", `{"command":""}`, "command: minLength"},
		{"empty path", "read_file", `{"path":""}`, "path: minLength"},
		{"empty pattern", "glob", `{"pattern":""}`, "pattern: minLength"},
		{"escape", "read_file", `{"path":"../../etc/passwd"}`, `path "../../etc/passwd" escapes the workspace: permission denied`},
		{"absolute", "read_file", `{"path":"/etc/passwd"}`, `path "/etc/passwd" is absolute; paths are relative to the workspace: permission denied`},
		{"symlink to /etc", "read_file", `{"path":"etc/passwd"}`, `path "etc/passwd" resolves outside the workspace: permission denied`},
		{"list through symlink", "list_dir", `{"path":"etc"}`, "permission denied"},
		{"write through symlink", "write_file", `{"path":"out/pwned.txt","content":"x"}`, "permission denied"},
		{"edit through symlink", "edit_file", `{"path":"etc/passwd","old_string":"root","new_string":"x"}`, "permission denied"},
		{"grep through symlink", "grep", `{"pattern":"root","path":"etc"}`, "permission denied"},
		{"glob through symlink", "glob", `{"pattern":"etc/*"}`, "permission denied"},
		{"unknown tool", "rm_rf", `{}`, "unknown tool rm_rf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.ts.Call(t.Context(), contracts.ToolCall{ID: "c1", Name: tc.tool, Input: json.RawMessage(tc.input)})
			if err != nil {
				t.Fatalf("err = %v, want an IsError result", err)
			}
			if !res.IsError || !strings.Contains(res.Content, tc.want) || res.CallID != "c1" {
				t.Errorf("got %+v, want IsError containing %q", res, tc.want)
			}
			if strings.Contains(res.Content, e.root) {
				t.Errorf("result reveals the host path: %q", res.Content)
			}
		})
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("wrote outside the workspace: %v", entries)
	}
}

func TestOutputCap(t *testing.T) {
	e := newEnv(t, 100)
	res := e.call(t, "bash", `{"command":"yes | head -c 1000"}`)
	want := strings.Repeat("y\n", 50) + "\n[output truncated: 900 bytes omitted]"
	if res.Content != want || res.IsError {
		t.Errorf("capped = %q", res.Content)
	}
	// Never cut a rune: 99 ASCII bytes then "é" (2 bytes) at the cap.
	e.put(t, "u.txt", strings.Repeat("a", 99)+"éz")
	res = e.call(t, "read_file", `{"path":"u.txt"}`)
	if res.Content != strings.Repeat("a", 99)+"\n[output truncated: 3 bytes omitted]" {
		t.Errorf("rune cut: %q", res.Content)
	}
	if got := capText("short", 100); got != "short" {
		t.Errorf("capText short = %q", got)
	}
}

func TestBind(t *testing.T) {
	r := NewRegistry()
	sb, err := local.New(t.TempDir(), local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := contracts.Binding{Sandbox: sb}
	yes, no := true, false
	errCases := []struct {
		name    string
		configs []contracts.ToolConfig
	}{
		{"unknown", []contracts.ToolConfig{{Name: "nope"}}},
		{"duplicate", []contracts.ToolConfig{{Name: "bash"}, {Name: "bash"}}},
		{"config array", []contracts.ToolConfig{{Name: "bash", Config: json.RawMessage(`[]`)}}},
		{"config string", []contracts.ToolConfig{{Name: "bash", Config: json.RawMessage(`"x"`)}}},
		{"config malformed", []contracts.ToolConfig{{Name: "bash", Config: json.RawMessage(`{"a":`)}}},
	}
	for _, tc := range errCases {
		if _, err := r.Bind(tc.configs, b); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
		}
	}
	specOnly, err := r.Bind([]contracts.ToolConfig{{Name: "read_file"}}, contracts.Binding{})
	if err != nil || len(specOnly.Specs()) != 1 {
		t.Fatalf("spec-only binding: %v", err)
	}
	if _, err := specOnly.Call(context.Background(), contracts.ToolCall{ID: "c", Name: "read_file", Input: json.RawMessage(`{"path":"x"}`)}); err == nil {
		t.Error("spec-only binding ran a tool")
	}

	ts, err := r.Bind([]contracts.ToolConfig{
		{Name: "bash", ReadOnly: &yes},
		{Name: "read_file", ReadOnly: &no, Config: json.RawMessage(`{"anything": 1}`)},
		{Name: "glob", Config: json.RawMessage(`null`)},
		{Name: "write_file"},
	}, b)
	if err != nil {
		t.Fatal(err)
	}
	effects := map[string]contracts.Effect{
		"bash": contracts.ReadOnly, "read_file": contracts.Mutating,
		"glob": contracts.ReadOnly, "write_file": contracts.Mutating, "python": "",
	}
	for name, want := range effects {
		if got := ts.Effect(name); got != want {
			t.Errorf("Effect(%s) = %q, want %q", name, got, want)
		}
	}
	var names []string
	for _, s := range ts.Specs() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"bash", "read_file", "glob", "write_file"}) {
		t.Errorf("Specs order = %v", names)
	}
	empty, err := r.Bind(nil, contracts.Binding{})
	if err != nil || len(empty.Specs()) != 0 {
		t.Errorf("empty bind: %v, %v", empty, err)
	}
}

func TestDefinitions(t *testing.T) {
	wantProps := map[string][]string{
		"read_file":    {"limit", "offset", "path"},
		"write_file":   {"append", "content", "path"},
		"edit_file":    {"new_string", "old_string", "path", "replace_all"},
		"list_dir":     {"path"},
		"glob":         {"pattern"},
		"grep":         {"glob", "path", "pattern"},
		"bash":         {"command", "timeout_seconds"},
		"python":       {"code", "timeout_seconds"},
		"run_workflow": {"input", "script"},
	}
	wantEffect := map[string]contracts.Effect{
		"read_file": contracts.ReadOnly, "list_dir": contracts.ReadOnly, "glob": contracts.ReadOnly, "grep": contracts.ReadOnly,
		"write_file": contracts.Mutating, "edit_file": contracts.Mutating, "bash": contracts.Mutating, "python": contracts.Mutating,
		"run_workflow": contracts.ReadOnly, // re-running finds the same run
	}
	r := NewRegistry()
	var names []string
	for _, d := range r.Definitions() {
		names = append(names, d.Name)
		var s struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.InputSchema, &s); err != nil {
			t.Fatalf("%s schema: %v", d.Name, err)
		}
		var props []string
		for p := range s.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties || !slices.Equal(props, wantProps[d.Name]) {
			t.Errorf("%s schema = %s", d.Name, d.InputSchema)
		}
		if d.Effect != wantEffect[d.Name] || d.Description == "" || d.Factory == nil {
			t.Errorf("%s: effect %q, description %q", d.Name, d.Effect, d.Description)
		}
	}
	if !slices.Equal(names, append(slices.Clone(allTools), "run_workflow")) {
		t.Errorf("definitions = %v", names)
	}
	if _, ok := r.Lookup("bash"); !ok {
		t.Error("Lookup(bash) failed")
	}
}

// The schemas are compiled once per registry and shared by every toolset.
func TestSchemasCompiledOnce(t *testing.T) {
	r := NewRegistry()
	sb, err := local.New(t.TempDir(), local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := []contracts.ToolConfig{{Name: "read_file"}}
	a, _ := r.Bind(cfg, contracts.Binding{Sandbox: sb})
	b, _ := r.Bind(cfg, contracts.Binding{Sandbox: sb})
	sa, sb2 := a.(*toolset).byName["read_file"].schema, b.(*toolset).byName["read_file"].schema
	if sa == nil || sa != sb2 || sa != r.schemas["read_file"] {
		t.Error("schema compiled per bind")
	}
}

// failingSandbox fails every ReadFile with an infrastructure error.
type failingSandbox struct{ contracts.SandboxAPI }

func (failingSandbox) ReadFile(context.Context, contracts.ReadFileRequest) (contracts.ReadFileResult, error) {
	return contracts.ReadFileResult{}, errors.New("connection reset")
}

func TestInfrastructureError(t *testing.T) {
	ts, err := NewRegistry().Bind([]contracts.ToolConfig{{Name: "read_file"}}, contracts.Binding{Sandbox: failingSandbox{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts.Call(t.Context(), contracts.ToolCall{ID: "c9", Name: "read_file", Input: json.RawMessage(`{"path":"a"}`)})
	if err == nil || !strings.Contains(err.Error(), "connection reset") || res.CallID != "c9" {
		t.Errorf("got %+v, %v; want the infrastructure error", res, err)
	}
}

func BenchmarkCallReadFile(b *testing.B) {
	e := newEnv(b, 0)
	if err := os.WriteFile(filepath.Join(e.root, "f.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	call := contracts.ToolCall{ID: "c", Name: "read_file", Input: json.RawMessage(`{"path":"f.txt","offset":0,"limit":100}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.ts.Call(ctx, call)
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}

func ExampleRegistry_Bind() {
	dir, _ := os.MkdirTemp("", "cairn-example-")
	defer os.RemoveAll(dir)
	sb, _ := local.New(dir, local.Options{})
	ts, _ := NewRegistry().Bind([]contracts.ToolConfig{{Name: "write_file"}, {Name: "read_file"}}, contracts.Binding{Sandbox: sb})
	ctx := context.Background()
	res, _ := ts.Call(ctx, contracts.ToolCall{ID: "1", Name: "write_file", Input: json.RawMessage(`{"path":"notes.txt","content":"hello world\n"}`)})
	fmt.Println(res.Content)
	res, _ = ts.Call(ctx, contracts.ToolCall{ID: "2", Name: "read_file", Input: json.RawMessage(`{"path":"notes.txt"}`)})
	fmt.Print(res.Content)
	// Output:
	// wrote 12 bytes to notes.txt
	// hello world
}
