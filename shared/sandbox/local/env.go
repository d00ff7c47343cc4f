package local

import "strings"

// Secret-looking variables are matched on the upper-cased name.
var (
	secretPrefixes = []string{"CAIRN_", "AWS_", "OTEL_"} // OTEL_EXPORTER_OTLP_HEADERS may hold a backend's key
	secretSuffixes = []string{"_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_ACCESS_KEY", "_SECRET_KEY", "_PRIVATE_KEY"}
	secretNames    = []string{"API_KEY", "TOKEN", "SECRET", "PASSWORD", "ACCESS_KEY", "TRACEPARENT", "TRACESTATE"} // the runtime's own trace context: a command gets its call's
)

// defaultPath is used when the base environment has no PATH.
const defaultPath = "PATH=/usr/local/bin:/usr/bin:/bin"

// Scrub returns env ("NAME=value" entries) without the runtime's secrets:
// every CAIRN_*, AWS_* and OTEL_* variable, TRACEPARENT and TRACESTATE, and every variable whose name ends with
// _API_KEY, _TOKEN, _SECRET, _PASSWORD, _ACCESS_KEY, _SECRET_KEY or
// _PRIVATE_KEY (or is exactly API_KEY, TOKEN, SECRET, PASSWORD, ACCESS_KEY),
// compared case-insensitively. Malformed entries (no name) are dropped too.
// The input is not modified; order is kept.
func Scrub(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || secretName(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, p := range secretPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, s := range secretNames {
		if n == s {
			return true
		}
	}
	return false
}

// commandEnv is the environment of every command: the scrubbed base, HOME set
// to the workspace root, and a PATH if the base had none.
func commandEnv(base []string, root string) []string {
	env := make([]string, 0, len(base)+2)
	hasPath := false
	for _, kv := range Scrub(base) {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "PWD", "OLDPWD":
			continue
		case "PATH":
			hasPath = true
		}
		env = append(env, kv)
	}
	if !hasPath {
		env = append(env, defaultPath)
	}
	return append(env, "HOME="+root)
}

// Allow returns env ("NAME=value" entries) with only what a sandboxed
// command needs from the environment of whoever starts it (an allowlist:
// PATH, the locale — LANG, LANGUAGE, LC_* —, TERM, TZ, TMPDIR, USER,
// LOGNAME, SHELL); everything else — credentials, tokens, connection
// strings such as DATABASE_URL or SLACK_WEBHOOK_URL — is dropped, whatever
// its name. The input is not modified; order is kept.
func Allow(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "LANG", k == "LANGUAGE", strings.HasPrefix(k, "LC_"), k == "TERM", k == "TZ",
			k == "TMPDIR", k == "USER", k == "LOGNAME", k == "SHELL":
			out = append(out, kv)
		}
	}
	return out
}
