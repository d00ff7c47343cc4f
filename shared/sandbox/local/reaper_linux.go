//go:build linux

package local

import (
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// The reaper is the containment of hosts without a writable cgroup v2
// (containment "subreaper"): the command runs under a small wrapper — the
// binary that links this package (cairn, sandboxd, a test), re-executed
// with reaperArg — that makes itself a child subreaper
// (PR_SET_CHILD_SUBREAPER), so every orphaned descendant (setsid, double
// fork, job control) is reparented to it rather than to pid 1. When the
// command exits, or the reaper gets SIGTERM (the call's timeout or cancel)
// or its parent dies (PR_SET_PDEATHSIG), it kills every process whose
// parent chain in /proc leads to it, reaps them, and exits with the
// command's status (128+n for a death by signal n).
//
// A descendant that escapes the reaper's tree this way is impossible; one
// that the reaper's own SIGKILL kills first hands its orphans to the
// reaper's parent — so the runtime never SIGKILLs the reaper, only its
// command's process group.

// reaperArg is the first argument that turns a binary linking this package
// into the reaper (argv[0] is "cairn-sandbox-reaper"; no flag of a cairn
// binary looks like it).
const reaperArg = "-cairn-sandbox-reaper-5b1f0e2a"

func init() {
	if len(os.Args) > 1 && os.Args[1] == reaperArg {
		os.Exit(reaperMain(os.Args[2:]))
	}
}

// reaperUsable: the reaper runs as /proc/self/exe.
func reaperUsable() bool {
	_, err := os.Stat("/proc/self/exe")
	return err == nil
}

// intoCgroup makes the command start in the cgroup open as fd
// (CLONE_INTO_CGROUP).
func intoCgroup(a *syscall.SysProcAttr, fd int) {
	a.UseCgroupFD = true
	a.CgroupFD = fd
}

const prSetChildSubreaper = 36

// reaperMain runs argv as the reaper and returns its exit status.
func reaperMain(argv []string) int {
	if len(argv) == 0 {
		return 126
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return 126
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0); e != 0 {
		return 126
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// The parent may have died before PDEATHSIG was set.
	if os.Getppid() == 1 {
		return 137
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		if p, err := lookPath(path); err == nil {
			path = p
		}
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		os.Stderr.WriteString("cairn: starting " + argv[0] + ": " + err.Error() + "\n")
		return 127
	}
	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		// Orphans adopted meanwhile stay zombies until killDescendants
		// reaps them: a single waiter of -1 could not stop.
		for {
			var ws syscall.WaitStatus
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err == nil {
				exited <- ws
			}
			return
		}
	}()
	status := 137
	select {
	case ws := <-exited:
		switch {
		case ws.Signaled():
			status = 128 + int(ws.Signal())
		default:
			status = ws.ExitStatus()
		}
	case <-term:
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	killDescendants(os.Getpid())
	return status
}

// killDescendants SIGKILLs every process whose parent chain leads to self
// and reaps them, round after round until none is left (a process forking
// while it is killed is caught by the next round).
func killDescendants(self int) {
	for range 1000 {
		pids := descendants(self)
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		// Every live descendant was killed: block for one of our children
		// to exit (ECHILD: none is ours yet), then take the others ready.
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(-1, &ws, 0, nil); err != syscall.EINTR {
				break
			}
		}
		reapReady()
	}
	reapReady()
}

// reapReady reaps the children that have exited, without waiting.
func reapReady() {
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || p <= 0 {
			return
		}
	}
}

// descendants lists the live processes whose parent chain leads to root
// (zombies excluded: they are dead, only waiting to be reaped).
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[pid] = pp
		}
	}
	var out []int
	for pid := range parent {
		for p, n := parent[pid], 0; n < 4096; p, n = parent[p], n+1 {
			if p == root {
				out = append(out, pid)
				break
			}
			if _, ok := parent[p]; !ok {
				break
			}
		}
	}
	return out
}

// lookPath finds file in $PATH (os/exec's LookPath, without importing it
// for the reaper).
func lookPath(file string) (string, error) {
	for dir := range strings.SplitSeq(os.Getenv("PATH"), ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + file
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}
