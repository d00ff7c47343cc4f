package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

var startedRE = regexp.MustCompile(`session (ses_\w+) · submission (sub_\w+)`)

// startedRun starts `cairn run` and reads its output until the line
// matching until, returning the session, the submission, the command and
// the rest of its output (read to the end by the caller).
func startedRun(t *testing.T, until string, args ...string) (sid, sub string, cmd *exec.Cmd, out *bufio.Reader, seen *strings.Builder) {
	t.Helper()
	cmd = exec.Command(cairnBin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out, seen = bufio.NewReader(pipe), &strings.Builder{}
	for {
		line, err := out.ReadString('\n')
		seen.WriteString(line)
		if m := startedRE.FindStringSubmatch(line); m != nil {
			sid, sub = m[1], m[2]
		}
		if strings.Contains(line, until) {
			return sid, sub, cmd, out, seen
		}
		if err != nil {
			t.Fatalf("cairn run ended before %q:\n%s", until, seen)
		}
	}
}

func exitOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// Ctrl-C in `cairn run` cancels the turn (its running command is killed)
// and follows it to its end.
func TestCtrlCCancelsTheTurn(t *testing.T) {
	data := t.TempDir()
	sid, sub, cmd, out, seen := startedRun(t, "→ bash", "run", "--data", data, "--model", "scripted:shell", "sleep 300")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	seen.Write(rest)
	code := exitOf(cmd.Wait())
	if code != 1 || !strings.Contains(seen.String(), "cancelling "+sub) || !strings.Contains(seen.String(), "CANCELLED") {
		t.Fatalf("exit %d:\n%s", code, seen)
	}
	show, code := cairn(t, "show", "--data", data, sid, sub)
	var got struct{ Phase, Error string }
	if err := json.Unmarshal([]byte(show), &got); err != nil || code != 0 || got.Phase != "CANCELLED" || !strings.Contains(got.Error, "interrupted in cairn run") {
		t.Fatalf("show: exit %d %v:\n%s", code, err, show)
	}
}

// A second Ctrl-C detaches: exit 130, the turn left to end server-side.
// The server is stopped (SIGSTOP) before the first Ctrl-C, so the cancel
// cannot complete and end the run before the second one arrives, however
// slow the machine.
func TestSecondCtrlCDetaches(t *testing.T) {
	data := t.TempDir()
	d := startDev(t, data)
	_, sub, cmd, out, seen := startedRun(t, "→ bash", "run", "--addr", d.cl.BaseURL(), "--data", data, "--model", "scripted:shell", "sleep 300")
	if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer d.cmd.Process.Signal(syscall.SIGCONT) // it shuts down at cleanup
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(seen.String(), "Ctrl-C again to detach") {
		line, err := out.ReadString('\n')
		seen.WriteString(line)
		if err != nil {
			t.Fatalf("no cancel notice:\n%s", seen)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	seen.Write(rest)
	if code := exitOf(cmd.Wait()); code != 130 || !strings.Contains(seen.String(), "detached") {
		t.Fatalf("exit %d:\n%s", code, seen)
	}
	_ = sub
}

func TestCancelRetryAndForkCommands(t *testing.T) {
	data := t.TempDir()
	// cancel: a parked turn
	out, code := cairn(t, "run", "--data", data, "--model", "scripted:approval", "--ask", "bash", "needs approval")
	m := startedRE.FindStringSubmatch(out)
	if code != 3 || m == nil {
		t.Fatalf("run: exit %d:\n%s", code, out)
	}
	out, code = cairn(t, "cancel", "--data", data, m[1], m[2], "--reason", "not today")
	if code != 0 || !strings.Contains(out, "CANCELLED") || !strings.Contains(out, "not today") {
		t.Fatalf("cancel: exit %d:\n%s", code, out)
	}
	if out, code = cairn(t, "cancel", "--data", data, m[1]); code != 1 || !strings.Contains(out, "want SESSION SUBMISSION") {
		t.Fatalf("cancel with one argument: exit %d:\n%s", code, out)
	}

	// retry: a turn that tripped the step limit (scripted:loop never stops)
	out, code = cairn(t, "run", "--data", data, "--model", "scripted:loop", "loop")
	m = startedRE.FindStringSubmatch(out)
	if code != 1 || m == nil || !strings.Contains(out, "limit_tripped:steps") {
		t.Fatalf("loop: exit %d:\n%s", code, out)
	}
	out, code = cairn(t, "retry", "--data", data, m[1], m[2])
	if code != 1 || !strings.Contains(out, "max_steps") {
		t.Fatalf("retry without a raised limit: exit %d:\n%s", code, out)
	}
	out, code = cairn(t, "retry", "--data", data, m[1], m[2], "--max-steps", "52")
	if code != 1 || !strings.Contains(out, "retrying "+m[2]+" (retry 1): resumes at step 51") || !strings.Contains(out, "at step 53: limit_tripped:steps") {
		t.Fatalf("retry: exit %d:\n%s", code, out)
	}

	// fork: from the first turn's answer
	out, code = cairn(t, "run", "--data", data, "--model", "scripted:plain", "one")
	m = startedRE.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("run one: exit %d:\n%s", code, out)
	}
	if out, code = cairn(t, "run", "--data", data, "--session", m[1], "two"); code != 0 {
		t.Fatalf("run two: exit %d:\n%s", code, out)
	}
	show, _ := cairn(t, "show", "--data", data, m[1], m[2])
	var first struct{ Leaf string }
	if err := json.Unmarshal([]byte(show), &first); err != nil || first.Leaf == "" {
		t.Fatalf("show: %v\n%s", err, show)
	}
	if out, code = cairn(t, "run", "--data", data, "--session", m[1], "--from", first.Leaf, "three"); code != 0 {
		t.Fatalf("run --from: exit %d:\n%s", code, out)
	}
	tree, code := cairn(t, "show", "--data", data, "--tree", m[1])
	lines := strings.Split(strings.TrimSpace(tree), "\n")
	if code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[4], "*     ") || !strings.Contains(lines[4], "three") || strings.HasPrefix(lines[2], "*") {
		t.Fatalf("show --tree: exit %d:\n%s", code, tree)
	}
	if out, code = cairn(t, "run", "--data", data, "--from", first.Leaf, "x"); code != 1 || !strings.Contains(out, "needs --session") {
		t.Fatalf("--from without --session: exit %d:\n%s", code, out)
	}
}
