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
		{"a non-root user", `^RUN .*useradd `},
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
	// The last USER must be a non-root one, and come before the entrypoint.
	user := ""
	for _, in := range instructions {
		if u, ok := strings.CutPrefix(in, "USER "); ok {
			user = strings.TrimSpace(u)
		}
	}
	if name, _, _ := strings.Cut(user, ":"); name == "" || name == "root" || name == "0" {
		t.Errorf("the image runs as root (USER %q)", user)
	}
	if strings.Contains(df, "SANDBOXD_TOKEN_SHA256=") {
		t.Error("the Dockerfile bakes in a token hash")
	}
}
