package main

import "strings"

// sandboxEnv keeps only what commands in a sandbox need from the runtime's
// environment (an allowlist: PATH, locale, terminal, time zone, temp dir,
// user name); everything else — credentials, tokens, connection strings —
// stays with the runtime. The sandbox scrubs secrets again on its own.
func sandboxEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "LANG", k == "LANGUAGE", strings.HasPrefix(k, "LC_"), k == "TERM", k == "TZ",
			k == "TMPDIR", k == "USER", k == "LOGNAME", k == "SHELL":
			out = append(out, kv)
		}
	}
	return out
}
