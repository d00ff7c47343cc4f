package local

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Containment: every process a call starts — its own children, a setsid or
// double-forked grandchild, a job-control (`set -m`) job — is gone when the
// call returns, times out or is cancelled. The strongest mechanism the host
// offers is used, detected once per process (Containment reports which):
//
//   - "cgroup2": a writable cgroup v2 hierarchy (mounted cgroup2, the
//     process's own cgroup writable, cgroup.kill present — Linux 5.14+).
//     Each process makes a cgroup cairn-<pid> under its own, and each call
//     a child cgroup of it; the command is cloned straight into it
//     (CLONE_INTO_CGROUP, so nothing escapes between fork and join) and the
//     call ends with cgroup.kill, which no descendant can leave. The pids
//     and memory controllers, where the parent enables them for us, also
//     carry the pids and memory_mib limits; a process finding cairn-<pid>
//     groups of dead processes kills and removes them.
//   - "subreaper": otherwise, on Linux, the command runs under a small
//     reaper (reaper_linux.go: this binary re-executed, a child subreaper)
//     that kills every descendant it adopted when the command exits or the
//     call is stopped.
//   - "process-group": elsewhere, the command's process group is killed; a
//     process that left the group (setsid) can outlive the call.
//
// Where the cgroup v2 hierarchy has no pids controller but a cgroup v1 pids
// hierarchy is writable (a hybrid host), the pids limit uses a v1 pids group
// per call, which the command joins before it runs.
type Containment string

const (
	ContainCgroup2      Containment = "cgroup2"
	ContainSubreaper    Containment = "subreaper"
	ContainProcessGroup Containment = "process-group"
)

// hostGroups is what this process detected.
type hostGroups struct {
	dir    string // our cgroup v2 parent of the per-call groups; "" = none
	pids   bool   // the pids controller is enabled in dir's children
	memory bool   // the memory controller is enabled in dir's children
	pidsV1 string // a cgroup v1 pids parent of per-call groups; "" = none
	seq    atomic.Int64
}

var (
	hostOnce sync.Once
	host     *hostGroups
)

// HostContainment reports the containment mechanism this process uses
// (detected on first use).
func HostContainment() Containment {
	switch {
	case groups().dir != "":
		return ContainCgroup2
	case reaperUsable():
		return ContainSubreaper
	}
	return ContainProcessGroup
}

func groups() *hostGroups {
	hostOnce.Do(func() { host = detectGroups() })
	return host
}

// mounts returns the mount points of cgroup2 and of the cgroup v1 pids
// hierarchy, from /proc/self/mountinfo.
func mounts() (v2, pidsV1 string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, opts := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(opts) < 3 {
			continue
		}
		switch {
		case opts[0] == "cgroup2" && v2 == "":
			v2 = fields[4]
		case opts[0] == "cgroup" && pidsV1 == "" && hasOpt(opts[2], "pids"):
			pidsV1 = fields[4]
		}
	}
	return v2, pidsV1
}

func hasOpt(list, opt string) bool {
	for o := range strings.SplitSeq(list, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// ownGroups returns this process's cgroup v2 path and v1 pids path, from
// /proc/self/cgroup.
func ownGroups() (v2, pidsV1 string, ok2, okV1 bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", false, false
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, ok2 = parts[2], true
		case hasOpt(parts[1], "pids"):
			pidsV1, okV1 = parts[2], true
		}
	}
	return v2, pidsV1, ok2, okV1
}

func detectGroups() *hostGroups {
	h := &hostGroups{}
	mount2, mountV1 := mounts()
	own2, ownV1, ok2, okV1 := ownGroups()
	name := "cairn-" + strconv.Itoa(os.Getpid())
	if mount2 != "" && ok2 {
		base := filepath.Join(mount2, filepath.FromSlash(own2))
		sweepDead(base)
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err == nil || errors.Is(err, os.ErrExist) {
			if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err == nil {
				h.dir = dir
				if b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); err == nil {
					for _, c := range strings.Fields(string(b)) {
						if (c == "pids" || c == "memory") && os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0) == nil {
							h.pids = h.pids || c == "pids"
							h.memory = h.memory || c == "memory"
						}
					}
				}
			} else {
				os.Remove(dir)
			}
		}
	}
	if h.dir != "" && !h.pids && mountV1 != "" && okV1 {
		base := filepath.Join(mountV1, filepath.FromSlash(ownV1))
		sweepDead(base)
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err == nil || errors.Is(err, os.ErrExist) {
			if _, err := os.Stat(filepath.Join(dir, "pids.max")); err == nil {
				h.pidsV1 = dir
			} else {
				os.Remove(dir)
			}
		}
	}
	return h
}

// sweepDead kills and removes the cairn-<pid> groups under base whose
// process is gone (what a crashed runtime or sandboxd left running).
func sweepDead(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), "cairn-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || !e.IsDir() || n == os.Getpid() {
			continue
		}
		if err := syscall.Kill(n, 0); errors.Is(err, syscall.ESRCH) {
			dir := filepath.Join(base, e.Name())
			subs, _ := os.ReadDir(dir)
			for _, s := range subs {
				if s.IsDir() {
					killGroup(filepath.Join(dir, s.Name()))
				}
			}
			os.Remove(dir)
		}
	}
}

// killGroup kills every process in cgroup dir (cgroup.kill in v2; in v1,
// each listed pid until none is left), waits until it is empty and removes
// it. A missing group is nothing to do.
func killGroup(dir string) {
	if _, err := os.Stat(dir); err != nil {
		return
	}
	v2 := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil
	// SIGKILL is delivered asynchronously: wait for the group to empty
	// (bounded: a process stuck in the kernel must not hang the call).
	wait := 100 * time.Microsecond
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); wait = min(2*wait, 20*time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			break
		}
		if !v2 {
			for f := range strings.FieldsSeq(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		time.Sleep(wait)
	}
	// An emptied cgroup may still be busy for a moment (its last task
	// being released): retry the removal briefly.
	for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
		if _, err := os.Stat(dir); err != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// callGroup is one call's cgroups; nil when the host has none.
type callGroup struct {
	dir    string   // v2
	fd     *os.File // dir, opened for CLONE_INTO_CGROUP
	pidsV1 string   // v1 pids, joined by the command's wrapper
}

// newCallGroup makes the cgroups of one call, with the limits the
// controllers can carry. It returns nil (process-group containment) when
// the host has no cgroup v2 or making one fails. A v1 pids group, which
// the command joins itself, is made writable to owner (the command's
// user, if not ours).
func (h *hostGroups) newCallGroup(lim limits, owner *syscall.Credential) *callGroup {
	if h.dir == "" {
		return nil
	}
	name := "c" + strconv.FormatInt(h.seq.Add(1), 10)
	g := &callGroup{dir: filepath.Join(h.dir, name)}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil
	}
	if h.pids && lim.Pids > 0 {
		_ = os.WriteFile(filepath.Join(g.dir, "pids.max"), []byte(strconv.Itoa(lim.Pids)), 0)
	}
	if h.memory && lim.MemoryMiB > 0 {
		mem := []byte(strconv.FormatInt(int64(lim.MemoryMiB)<<20, 10))
		_ = os.WriteFile(filepath.Join(g.dir, "memory.max"), mem, 0)
		_ = os.WriteFile(filepath.Join(g.dir, "memory.swap.max"), []byte("0"), 0)
	}
	if h.pidsV1 != "" && lim.Pids > 0 {
		d := filepath.Join(h.pidsV1, name)
		if os.Mkdir(d, 0o755) == nil {
			if os.WriteFile(filepath.Join(d, "pids.max"), []byte(strconv.Itoa(lim.Pids)), 0) == nil &&
				(owner == nil || os.Chown(filepath.Join(d, "cgroup.procs"), int(owner.Uid), int(owner.Gid)) == nil) {
				g.pidsV1 = d
			} else {
				os.Remove(d)
			}
		}
	}
	fd, err := os.Open(g.dir)
	if err != nil {
		g.kill()
		return nil
	}
	g.fd = fd
	return g
}

// kill kills everything left in the call's groups and removes them.
func (g *callGroup) kill() {
	if g == nil {
		return
	}
	if g.fd != nil {
		g.fd.Close()
	}
	killGroup(g.dir)
	if g.pidsV1 != "" {
		killGroup(g.pidsV1)
	}
}

// event reads counter key of file (a cgroup's memory.events or
// pids.events) in the v2 group, then the v1 one.
func (g *callGroup) event(file, key string) int64 {
	if g == nil {
		return 0
	}
	var n int64
	for _, d := range []string{g.dir, g.pidsV1} {
		if d == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, file))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == key {
				if x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					n += x
				}
			}
		}
	}
	return n
}

// limitsIn reports which limits g's controllers carry (the others are
// rlimits).
func (h *hostGroups) limitsIn(g *callGroup) (pids, memory bool) {
	if g == nil {
		return false, false
	}
	return h.pids || g.pidsV1 != "", h.memory
}

// describe is how a leftover of the call can be found again by a later
// process (recorded in the ledger while the call runs).
func (g *callGroup) describe() []string {
	if g == nil {
		return nil
	}
	out := []string{g.dir}
	if g.pidsV1 != "" {
		out = append(out, g.pidsV1)
	}
	return out
}

// procStart returns the start time of pid (clock ticks since boot, field
// 22 of /proc/pid/stat) and its process group.
func procStart(pid int) (start uint64, pgid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	pgid, err = strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, err
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return start, pgid, err
}

// killLeftGroup kills the processes of process group pgid that started no
// earlier than start: what a dead runner's call left, without cgroups. A
// group id is not reused while any member of the group lives, so the group
// is the call's unless its leader's pid now runs a process started at
// another time (the id was reused: nothing is killed).
func killLeftGroup(pgid int, start uint64) {
	if pgid <= 1 {
		return
	}
	if st, _, err := procStart(pgid); err == nil && st != start {
		return
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, pg, err := procStart(pid); err == nil && pg == pgid && st >= start {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
