package local

import (
	"slices"
	"testing"
)

func TestScrub(t *testing.T) {
	tests := []struct {
		in   string
		keep bool
	}{
		{"PATH=/usr/bin:/bin", true},
		{"HOME=/root", true},
		{"LANG=C.UTF-8", true},
		{"TERM=xterm", true},
		{"GOPATH=/go", true},
		{"TOKENIZER=bert", true},     // TOKEN not a suffix
		{"MY_TOKEN_FILE=/x", true},   // suffix only
		{"PASSWORD_HINT=none", true}, // prefix is fine
		{"EMPTY=", true},             // empty value kept
		{"WITH=EQUALS=SIGNS", true},  // value holds "="
		{"CAIRN_DB=/var/cairn", false},
		{"cairn_lower=1", false},
		{"AWS_ACCESS_KEY_ID=AKIA", false},
		{"AWS_SECRET_ACCESS_KEY=s", false},
		{"AWS_REGION=eu-west-1", false},
		{"ANTHROPIC_API_KEY=sk", false},
		{"openai_api_key=sk", false},
		{"GITHUB_TOKEN=ghp", false},
		{"Slack_Token=x", false},
		{"DB_PASSWORD=pw", false},
		{"APP_SECRET=s", false},
		{"STORAGE_ACCESS_KEY=k", false},
		{"DJANGO_SECRET_KEY=k", false},
		{"SSH_PRIVATE_KEY=k", false},
		{"TOKEN=t", false},
		{"API_KEY=k", false},
		{"NOEQUALS", false},
		{"=value", false},
	}
	var in, want []string
	for _, tc := range tests {
		in = append(in, tc.in)
		if tc.keep {
			want = append(want, tc.in)
		}
	}
	orig := slices.Clone(in)
	got := Scrub(in)
	if !slices.Equal(got, want) {
		t.Errorf("Scrub =\n%q\nwant\n%q", got, want)
	}
	if !slices.Equal(in, orig) {
		t.Error("Scrub modified its input")
	}
	if got := Scrub(nil); len(got) != 0 {
		t.Errorf("Scrub(nil) = %q", got)
	}
}

func TestCommandEnv(t *testing.T) {
	got := commandEnv([]string{"HOME=/root", "PWD=/x", "FOO_API_KEY=k", "LANG=C"}, "/ws")
	want := []string{"LANG=C", defaultPath, "HOME=/ws"}
	if !slices.Equal(got, want) {
		t.Errorf("commandEnv = %q, want %q", got, want)
	}
	got = commandEnv([]string{"PATH=/p"}, "/ws")
	if !slices.Equal(got, []string{"PATH=/p", "HOME=/ws"}) {
		t.Errorf("commandEnv kept PATH wrongly: %q", got)
	}
}
