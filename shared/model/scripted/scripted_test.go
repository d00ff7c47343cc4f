package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

func user(p string) contracts.Node {
	return contracts.Node{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: p}}}
}

func TestStreamIsDeterministicAndChunked(t *testing.T) {
	c := New()
	msgs := []contracts.Node{user("hi")}
	var evs []contracts.ModelEvent
	r1, err := c.Stream(context.Background(), contracts.ModelRequest{Model: "plain", Messages: msgs}, func(e contracts.ModelEvent) error {
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := c.Stream(context.Background(), contracts.ModelRequest{Model: "plain", Messages: msgs}, func(contracts.ModelEvent) error { return nil })
	if r1.Text != r2.Text || !strings.HasSuffix(r1.Text, "You said: hi") {
		t.Fatalf("not deterministic or wrong text: %q vs %q", r1.Text, r2.Text)
	}
	texts := 0
	var joined string
	for _, e := range evs {
		if e.Type == contracts.ModelText {
			texts++
			joined += e.Text
		}
	}
	if texts < 2 || joined != r1.Text {
		t.Fatalf("want ≥2 text chunks joining to the answer, got %d (%q)", texts, joined)
	}
	if c.Calls() != 2 {
		t.Fatalf("Calls = %d", c.Calls())
	}
}

func TestStepFollowsTranscript(t *testing.T) {
	c := New()
	msgs := []contracts.Node{user("go")}
	var names [][]string
	for range 4 {
		r, err := c.Stream(context.Background(), contracts.ModelRequest{Model: "demo", Messages: msgs}, func(contracts.ModelEvent) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, tc := range r.ToolCalls {
			ns = append(ns, tc.Name)
		}
		names = append(names, ns)
		msgs = append(msgs, contracts.Node{Role: contracts.RoleAssistant}, contracts.Node{Role: contracts.RoleTool})
	}
	want := "[[write_file] [list_dir read_file] [bash] []]"
	if got := strings.ReplaceAll(strings.TrimSpace(fmtNames(names)), "  ", " "); got != want {
		t.Fatalf("steps = %s, want %s", got, want)
	}
}

func fmtNames(n [][]string) string {
	parts := make([]string, len(n))
	for i, x := range n {
		parts[i] = "[" + strings.Join(x, " ") + "]"
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestParse(t *testing.T) {
	if _, d, err := Parse("kill@150ms"); err != nil || d.Milliseconds() != 150 {
		t.Fatalf("Parse kill@150ms = %v, %v", d, err)
	}
	for _, bad := range []string{"nope", "plain@x", "plain@-1s"} {
		if _, _, err := Parse(bad); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("Parse(%q) err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestShellRunsThePrompt(t *testing.T) {
	c := New()
	msgs := []contracts.Node{{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: `echo "hi" > kept.txt`}}}}
	r, err := c.Stream(context.Background(), contracts.ModelRequest{Model: "shell", Messages: msgs}, func(contracts.ModelEvent) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "bash" || string(r.ToolCalls[0].Input) != `{"command":"echo \"hi\" > kept.txt"}` {
		t.Fatalf("calls %+v", r.ToolCalls)
	}
}

func TestSizedScenario(t *testing.T) {
	c := New()
	var chunks []string
	resp, err := c.Stream(context.Background(), contracts.ModelRequest{Model: "bench-4096-80-2048", Messages: []contracts.Node{
		{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "go"}}},
		{Role: contracts.RoleAssistant},
	}}, func(ev contracts.ModelEvent) error {
		if ev.Type == contracts.ModelText {
			chunks = append(chunks, ev.Text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Text) < 4090 || len(resp.Text) > 4096 || len(resp.ToolCalls) != 0 {
		t.Errorf("answer of %d bytes, %d calls; want ~4096 bytes, none", len(resp.Text), len(resp.ToolCalls))
	}
	if len(chunks) < 45 || len(chunks) > 52 {
		t.Errorf("%d chunks, want ~51 of ~80 B", len(chunks))
	}
	if !strings.HasPrefix(resp.Text, "go: lorem") {
		t.Errorf("answer begins %q, want the prompt first", resp.Text[:min(len(resp.Text), 20)])
	}
	if _, _, err := Parse("bench-1-2@60ms"); err == nil {
		t.Error("Parse(bench-1-2) succeeded, want an unknown scenario")
	}
}

// Two turns of a sized scenario with different prompts store different
// bytes — the answer and the tool's output — of the named sizes, and the
// prompt reaches the shell as one quoted word.
func TestSizedScenarioDiffersByPrompt(t *testing.T) {
	c := New()
	step := func(prompt string, n int) contracts.ModelResponse {
		t.Helper()
		msgs := []contracts.Node{{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: prompt}}}}
		for range n {
			msgs = append(msgs, contracts.Node{Role: contracts.RoleAssistant})
		}
		resp, err := c.Stream(context.Background(), contracts.ModelRequest{Model: "bench-300-80-100", Messages: msgs},
			func(contracts.ModelEvent) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	a, b := step("turn a", 1), step("it's b", 1)
	if a.Text == b.Text || len(a.Text) != 300 || len(b.Text) != 300 {
		t.Errorf("answers %q and %q: want 300 bytes each, different", a.Text, b.Text)
	}
	ca, cb := step("turn a", 0), step("it's b", 0)
	if len(ca.ToolCalls) != 1 || len(cb.ToolCalls) != 1 {
		t.Fatalf("calls %+v, %+v", ca.ToolCalls, cb.ToolCalls)
	}
	for _, tc := range []struct {
		call contracts.ToolCall
		want string
	}{{ca.ToolCalls[0], "turn a: "}, {cb.ToolCalls[0], "it's b: "}} {
		var in struct{ Command string }
		if err := json.Unmarshal(tc.call.Input, &in); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("sh", "-c", in.Command).Output()
		if err != nil {
			t.Fatalf("%s: %v", in.Command, err)
		}
		if len(out) != 100 || !strings.HasPrefix(string(out), tc.want) || strings.Trim(string(out[len(tc.want):]), "x") != "" {
			t.Errorf("%s printed %q, want %q then x to 100 bytes", in.Command, out, tc.want)
		}
	}
}
