package sandboxtest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// escapees starts three processes that leave the command's process group
// or its process tree — a setsid child, a double-forked (orphaned) child
// and a job-control (`set -m`) job — each writing its pid to a FIFO the
// command reads (so all three run before the command goes on), and their
// pids to escaped.pids; then the command runs tail.
const escapees = `rm -f escaped.fifo escaped.pids; mkfifo escaped.fifo && exec 3<>escaped.fifo || exit 99
setsid sh -c 'echo "0 $$" > escaped.fifo; exec sleep 100001' </dev/null >/dev/null 2>&1 &
( sh -c 'echo "1 $$" > escaped.fifo; exec sleep 100002' </dev/null >/dev/null 2>&1 & )
set -m
sh -c 'echo "2 $$" > escaped.fifo; exec sleep 100003' </dev/null >/dev/null 2>&1 &
set +m
for i in 1 2 3; do read -r p <&3 && echo "$p" >> escaped.pids; done
exec 3<&-
`

// escaped reads the pids the command wrote ("<which> <pid>" lines, in
// any order), or nil if it wrote fewer than three.
func (s *suite) escaped(t *testing.T) []int {
	t.Helper()
	pids := make([]int, 3)
	n := 0
	for line := range strings.SplitSeq(strings.TrimSpace(s.content(t, "escaped.pids")), "\n") {
		which, p, _ := strings.Cut(line, " ")
		i, err1 := strconv.Atoi(which)
		pid, err2 := strconv.Atoi(p)
		if err1 != nil || err2 != nil || i < 0 || i > 2 || pid <= 0 || pids[i] != 0 {
			return nil
		}
		pids[i] = pid
		n++
	}
	if n != 3 {
		return nil
	}
	return pids
}

func (s *suite) wantGone(t *testing.T, when string, pids []int) {
	t.Helper()
	names := []string{"setsid child", "double-forked child", "job-control child"}
	for i, pid := range pids {
		if !Exits(t, pid) {
			t.Errorf("%s: the %s (pid %d) survived the call", when, names[i], pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A call's descendants are all gone once it returns, even those that left
// its process group or were reparented away from it.
func testExecContainsDescendants(t *testing.T, s *suite) {
	s.needProc(t)
	res, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: escapees + "echo ok", Timeout: 10 * time.Minute, CallID: "call-escapees"})
	noErr(t, "exec", err)
	if res.ExitCode != 0 || res.Stdout != "ok\n" {
		t.Fatalf("got %+v, want exit 0 and ok", res)
	}
	pids := s.escaped(t)
	if pids == nil {
		t.Fatalf("escaped.pids = %q: want three pids", s.content(t, "escaped.pids"))
	}
	s.wantGone(t, "after the call returned", pids)
}

// So are they when the call times out. The timeout must fire after the
// command wrote the pids: it starts short and doubles until the command
// got that far (a loaded machine), so no wall-clock margin is assumed.
func testExecTimeoutContainsDescendants(t *testing.T, s *suite) {
	s.needProc(t)
	for timeout := 500 * time.Millisecond; ; timeout *= 2 {
		res, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: escapees + "sleep 100000", Timeout: timeout})
		noErr(t, "exec", err)
		if !res.TimedOut || res.ExitCode != -1 {
			t.Fatalf("got %+v, want TimedOut and exit -1", res)
		}
		if pids := s.escaped(t); pids != nil {
			s.wantGone(t, "after the call timed out", pids)
			return
		}
		if timeout > 2*time.Minute {
			t.Fatalf("the command never wrote its pids before its timeout")
		}
	}
}

// needProc skips the test without /proc to see the processes.
func (s *suite) needProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to check the processes")
	}
}
