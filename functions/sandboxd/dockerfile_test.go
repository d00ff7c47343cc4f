package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The image cannot be built here (no Docker); check what matters in it.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	var instructions []string // continuation lines joined, comments dropped
	for _, l := range strings.Split(strings.ReplaceAll(df, "\\\n", " "), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			instructions = append(instructions, l)
		}
	}
	has := func(re string) bool {
		for _, in := range instructions {
			if regexp.MustCompile(re).MatchString(in) {
				return true
			}
		}
		return false
	}
	checks := []struct{ what, re string }{
		{"an arm64 base image", `^FROM --platform=linux/arm64 \S+`},
		{"bash installed", `^RUN .*apt-get install .*\bbash\b`},
		{"python3 installed", `^RUN .*apt-get install .*\bpython3\b`},
		{"the commands' user 10001", `^RUN .*useradd .*--uid 10001 `},
		{"the workspace owned by the commands' user", `^RUN .*chown sandbox:sandbox /workspace( |$)`},
		{"the state directory root's alone", `^RUN .*chown root:root /var/lib/sandboxd .*chmod 0700 /var/lib/sandboxd`},
		{"commands run as 10001", `^ENV SANDBOXD_RUN_AS=10001:10001$`},
		{"the cross-built binary", `^COPY dist/sandboxd/bootstrap /usr/local/bin/sandboxd$`},
		{"the workspace", `^WORKDIR /workspace$`},
		{"the port", `^EXPOSE 7070$`},
		{"sandboxd on all interfaces with workspace and state", `^ENTRYPOINT \[.*"/usr/local/bin/sandboxd", "--addr", "0\.0\.0\.0:7070", "--workspace", "/workspace", "--state", "/var/lib/sandboxd"\]$`},
	}
	for _, c := range checks {
		if !has(c.re) {
			t.Errorf("Dockerfile lacks %s (%s)", c.what, c.re)
		}
	}
	// sandboxd runs as root, and its commands as 10001 (SANDBOXD_RUN_AS,
	// above): only root can drop a command to another uid, and only another
	// uid keeps commands from the call ledger (root's, 0700) and from
	// signalling or tracing sandboxd; as one shared uid a command could
	// read or forge the ledger. Root is the task's alone: the task holds no
	// other secret (a role without permissions, a token hash), mounts
	// nothing of a host, and a Fargate task cannot escalate beyond itself.
	// So the last USER, if any, must be root.
	user := ""
	for _, in := range instructions {
		if u, ok := strings.CutPrefix(in, "USER "); ok {
			user = strings.TrimSpace(u)
		}
	}
	if name, _, _ := strings.Cut(user, ":"); name != "" && name != "root" && name != "0" {
		t.Errorf("sandboxd runs as USER %q: without root it cannot run commands as another uid", user)
	}
	if strings.Contains(df, "SANDBOXD_TOKEN_SHA256=") {
		t.Error("the Dockerfile bakes in a token hash")
	}
}
