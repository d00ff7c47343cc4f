package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// quick bounds how long a killed or finished command may take to return.
const quick = 15 * time.Second

var truncMarker = regexp.MustCompile(`\n\[output truncated: [0-9]+ bytes omitted\]$`)

func testExec(t *testing.T, s *suite) {
	s.put(t, "sub/marker.txt", "in sub\n")
	s.put(t, "home.txt", "at home\n")
	tests := []struct {
		name           string
		req            contracts.ExecRequest
		code           int
		stdout, stderr string
	}{
		{"exit code and streams", contracts.ExecRequest{Command: "echo hi; echo err >&2; exit 3"}, 3, "hi\n", "err\n"},
		{"success", contracts.ExecRequest{Command: "true"}, 0, "", ""},
		{"stdin", contracts.ExecRequest{Command: "cat; echo", Stdin: "abc"}, 0, "abc\n", ""},
		{"no stdin does not block", contracts.ExecRequest{Command: "cat"}, 0, "", ""},
		{"unread stdin", contracts.ExecRequest{Command: "echo ok", Stdin: strings.Repeat("x", 1<<20)}, 0, "ok\n", ""},
		{"dir", contracts.ExecRequest{Command: "cat marker.txt", Dir: "sub"}, 0, "in sub\n", ""},
		{"home is the workspace", contracts.ExecRequest{Command: `cd "$HOME" && cat home.txt`}, 0, "at home\n", ""},
		{"bash syntax", contracts.ExecRequest{Command: "for i in 1 2; do printf %s $i; done"}, 0, "12", ""},
		{"command not found", contracts.ExecRequest{Command: "cairn-no-such-command-xyz 2>/dev/null"}, 127, "", ""},
	}
	for _, tc := range tests {
		tc.req.Timeout = 30 * time.Second
		res, err := s.api.Exec(s.ctx, tc.req)
		noErr(t, tc.name, err)
		if res.ExitCode != tc.code || res.Stdout != tc.stdout || res.Stderr != tc.stderr || res.TimedOut || res.Truncated {
			t.Errorf("%s: got %+v, want exit %d stdout %q stderr %q", tc.name, res, tc.code, tc.stdout, tc.stderr)
		}
	}
	res, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: "printf made > made.txt", CallID: "call-made"})
	noErr(t, "write from exec", err)
	if res.ExitCode != 0 || s.content(t, "made.txt") != "made" {
		t.Errorf("exec did not run in the workspace: %+v, made.txt %q", res, s.content(t, "made.txt"))
	}
}

func testExecErrors(t *testing.T, s *suite) {
	s.put(t, "f.txt", "f")
	_, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: ""})
	wantErr(t, "empty command", err, contracts.ErrInvalid)
	_, err = s.api.Exec(s.ctx, contracts.ExecRequest{Command: "true", Dir: "missing"})
	wantErr(t, "missing dir", err, contracts.ErrNotFound)
	_, err = s.api.Exec(s.ctx, contracts.ExecRequest{Command: "true", Dir: "f.txt"})
	wantErr(t, "dir is a file", err, contracts.ErrInvalid)
}

// gone waits until pid no longer runs (absent, or a zombie awaiting reaping).
// Signal delivery is asynchronous, so this polls an external condition.
func gone(pid int) bool {
	deadline := time.Now().Add(quick)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		// state is the field after the parenthesised command name
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i:]), ") Z") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}

func testExecTimeoutKillsGroup(t *testing.T, s *suite) {
	start := time.Now()
	res, err := s.api.Exec(s.ctx, contracts.ExecRequest{
		Command: "sleep 100000 & echo $! > bg.pid; sleep 100000",
		Timeout: 500 * time.Millisecond,
	})
	noErr(t, "exec", err)
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("got %+v, want TimedOut and exit -1", res)
	}
	if d := time.Since(start); d > quick {
		t.Errorf("took %v", d)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s.content(t, "bg.pid")))
	if err != nil || pid <= 0 {
		t.Fatalf("bg.pid: %q", s.content(t, "bg.pid"))
	}
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc to check the background process")
	}
	if !gone(pid) {
		t.Errorf("background process %d survived the timeout", pid)
	}
}

func testExecNeverEnds(t *testing.T, s *suite) {
	start := time.Now()
	res, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: "sleep 100000", Timeout: 300 * time.Millisecond})
	noErr(t, "exec", err)
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("got %+v, want TimedOut and exit -1", res)
	}
	if d := time.Since(start); d > quick {
		t.Errorf("took %v", d)
	}
}

func testExecContextDeadline(t *testing.T, s *suite) {
	ctx, cancel := context.WithTimeout(s.ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := s.api.Exec(ctx, contracts.ExecRequest{Command: "sleep 100000"})
	switch {
	case err == nil:
		if !res.TimedOut {
			t.Errorf("got %+v, want TimedOut", res)
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, contracts.ErrTimeout):
	default:
		t.Errorf("err = %v, want a timed-out result or a deadline error", err)
	}
	if d := time.Since(start); d > quick {
		t.Errorf("took %v", d)
	}
}

func testExecBackgroundChild(t *testing.T, s *suite) {
	start := time.Now()
	res, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: "sleep 100000 & echo started", Timeout: time.Minute})
	noErr(t, "exec", err)
	if res.TimedOut || res.ExitCode != 0 || res.Stdout != "started\n" {
		t.Errorf("got %+v, want exit 0 and started", res)
	}
	if d := time.Since(start); d > quick {
		t.Errorf("a background child held the call for %v", d)
	}
}

func testExecOutputCap(t *testing.T, s *suite) {
	const n = 10_000_000
	res, err := s.api.Exec(s.ctx, contracts.ExecRequest{
		Command: "yes | head -c 10000000; head -c 10000000 /dev/zero | tr '\\0' e >&2",
		Timeout: time.Minute,
	})
	noErr(t, "exec", err)
	if res.TimedOut || res.ExitCode != 0 || !res.Truncated {
		t.Fatalf("exit %d timedOut %v truncated %v, want a finished, truncated run", res.ExitCode, res.TimedOut, res.Truncated)
	}
	for name, out := range map[string]string{"stdout": res.Stdout, "stderr": res.Stderr} {
		if len(out) >= n {
			t.Errorf("%s not capped: %d bytes", name, len(out))
		}
		if !truncMarker.MatchString(out) {
			t.Errorf("%s lacks the truncation marker: ...%q", name, out[max(0, len(out)-80):])
		}
	}
	if !strings.HasPrefix(res.Stdout, "y\ny\ny\n") || !strings.HasPrefix(res.Stderr, "eeee") {
		t.Errorf("output does not start with the command's output")
	}
}

func testExecEnvScrubbed(t *testing.T, s *suite) {
	res, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: "env", Timeout: 30 * time.Second})
	noErr(t, "exec", err)
	if res.ExitCode != 0 || res.Stdout == "" {
		t.Fatalf("env: %+v", res)
	}
	for _, line := range strings.Split(res.Stdout, "\n") {
		name, _, ok := strings.Cut(line, "=")
		if ok && secretVar(name) {
			t.Errorf("sandboxed process sees %s", name)
		}
	}
}

func testRunScript(t *testing.T, s *suite) {
	if res, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: "command -v python3"}); err != nil || res.ExitCode != 0 {
		t.Skip("python3 is not available in the sandbox")
	}
	n := 0
	run := func(src string, timeout time.Duration) contracts.ExecResult {
		t.Helper()
		n++
		res, err := s.api.RunScript(s.ctx, contracts.RunScriptRequest{Language: "python", Source: src, Timeout: timeout, CallID: fmt.Sprintf("call-py-%d", n)})
		noErr(t, src, err)
		return res
	}
	if res := run("print(1+1)", 30*time.Second); res.ExitCode != 0 || res.Stdout != "2\n" {
		t.Errorf("print: %+v", res)
	}
	if res := run("import sys\nsys.exit(4)", 30*time.Second); res.ExitCode != 4 {
		t.Errorf("exit: %+v", res)
	}
	if res := run("def (:", 30*time.Second); res.ExitCode == 0 || !strings.Contains(res.Stderr, "SyntaxError") {
		t.Errorf("syntax error: %+v", res)
	}
	if res := run("open('py.txt', 'w').write('from python')", 30*time.Second); res.ExitCode != 0 || s.content(t, "py.txt") != "from python" {
		t.Errorf("script did not run in the workspace: %+v", res)
	}
	start := time.Now()
	if res := run("import time\ntime.sleep(100000)", 300*time.Millisecond); !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("timeout: %+v", res)
	}
	if d := time.Since(start); d > quick {
		t.Errorf("timed-out script took %v", d)
	}
	_, err := s.api.RunScript(s.ctx, contracts.RunScriptRequest{Language: "cobol", Source: "DISPLAY 'HI'."})
	wantErr(t, "unknown language", err, contracts.ErrInvalid)
}
