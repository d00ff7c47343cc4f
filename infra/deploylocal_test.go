package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// `make deploy-local` (scripts/deploy-local.sh) hands cdklocal both
// endpoint variables it needs — AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_S3 —
// for an endpoint given as 127.0.0.1 or as localhost alike, with the host
// as an IP address (S3 then addresses buckets by path, no
// <bucket>.localhost DNS needed). Without AWS_ENDPOINT_URL_S3 cdklocal
// refuses AWS_ENDPOINT_URL; without either it needs public DNS
// (localhost.localstack.cloud).
func TestDeployLocalEndpoint(t *testing.T) {
	want := func(url string) string { return "AWS_ENDPOINT_URL=" + url + "\nAWS_ENDPOINT_URL_S3=" + url + "\n" }
	for _, c := range []struct {
		arg, env, want string
	}{
		{"http://127.0.0.1:4566", "", want("http://127.0.0.1:4566")},
		{"http://localhost:4566", "", want("http://127.0.0.1:4566")},
		{"127.0.0.1", "", want("http://127.0.0.1:4566")},
		{"localhost", "", want("http://127.0.0.1:4566")},
		{"localhost:4599/", "", want("http://127.0.0.1:4599")},
		{"http://[::1]:4566", "", want("http://[::1]:4566")},
		{"", "http://localhost:4566", want("http://127.0.0.1:4566")}, // $AWS_ENDPOINT_URL
		{"", "", want("http://127.0.0.1:4566")},                      // the default
	} {
		args := []string{"--env"}
		if c.arg != "" {
			args = append(args, c.arg)
		}
		cmd := exec.Command("../scripts/deploy-local.sh", args...)
		cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+c.env, "AWS_ENDPOINT_URL_S3=")
		if c.env == "" {
			cmd.Env = withoutEndpoints(os.Environ())
		}
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != c.want {
			t.Errorf("deploy-local.sh --env %q (AWS_ENDPOINT_URL=%q): %v\n%s\nwant\n%s", c.arg, c.env, err, out, c.want)
		}
	}
	for _, bad := range []string{"ftp://127.0.0.1", "http://127.0.0.1:port"} {
		out, err := exec.Command("../scripts/deploy-local.sh", "--env", bad).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "deploy-local: endpoint") {
			t.Errorf("deploy-local.sh --env %q: %v %s, want a refusal", bad, err, out)
		}
	}
}

func withoutEndpoints(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "AWS_ENDPOINT_URL") {
			out = append(out, e)
		}
	}
	return out
}
