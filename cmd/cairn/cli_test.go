package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cairn runs the built binary with no stdin and a minimal environment.
func cairn(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(cairnBin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func TestRunEmbeddedDemo(t *testing.T) {
	data := t.TempDir()
	out, code := cairn(t, "run", "--data", data, "--model", "scripted:demo", "do the demo")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"[step 1]", "→ write_file", "✓ list_dir: notes.txt", "✓ bash: 2", "[step 4] Done"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^committed sub_\w+ in 4 steps$`).MatchString(out) {
		t.Fatalf("no final committed line:\n%s", out)
	}
}

func TestRunParksThenApprove(t *testing.T) {
	data := t.TempDir()
	out, code := cairn(t, "run", "--data", data, "--model", "scripted:approval", "--ask", "bash", "needs approval")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (parked):\n%s", code, out)
	}
	m := regexp.MustCompile(`cairn approve (ses_\w+) (apr_\w+) allow\|deny`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no approve instructions:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "sandboxes", m[1], "approved.txt")); err == nil {
		t.Fatal("the tool ran before approval")
	}
	out, code = cairn(t, "approve", "--data", data, m[1], m[2], "allow")
	if code != 0 || !strings.Contains(out, "committed ") {
		t.Fatalf("approve: exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "! approval "+m[2]+": allow by ") {
		t.Fatalf("approve: no line saying who allowed it:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(data, "sandboxes", m[1], "approved.txt")); err != nil || string(b) != "approved\n" {
		t.Fatalf("approved.txt = %q, %v", b, err)
	}
}

func TestCLIErrors(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"run", "--data", t.TempDir()}, 1, "give a prompt"},
		{[]string{"run", "--data", t.TempDir(), "--model", "scripted:nope", "hi"}, 1, "unknown scenario"},
		{[]string{"run", "--data", t.TempDir(), "--approve", "maybe", "hi"}, 1, "want ask, allow or deny"},
		{[]string{"approve", "--data", t.TempDir(), "only-one"}, 1, "want SESSION APPROVAL"},
		{[]string{"show", "--data", t.TempDir(), "ses_nope"}, 1, "not_found"},
		{[]string{"run", "--data", t.TempDir(), "--model", "anthropic:claude-sonnet-4-5", "hi"}, 1, "ANTHROPIC_API_KEY"},
		{[]string{"run", "--data", t.TempDir(), "--model", "openai:gpt-4o", "hi"}, 1, "OPENAI_API_KEY"},
		{[]string{"run", "--data", t.TempDir(), "--model", "nosuch:model", "hi"}, 1, "not configured"},
		{[]string{"run", "--data", t.TempDir(), "--sandbox", "fargate", "hi"}, 1, "not served by this deployment"},
	}
	for _, c := range cases {
		out, code := cairn(t, c.args...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("cairn %v: exit %d, output %q; want exit %d containing %q", c.args, code, out, c.code, c.want)
		}
	}
}
