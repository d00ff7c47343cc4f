package local

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairnrun/cairn/shared/contracts"
)

// limits are the per-call limits of a sandbox (Options.Limits, from the
// session's spec.sandbox.limits).
type limits = contracts.SandboxLimits

// Per-call limits are enforced by the command's own wrapper: the sandbox's
// shell sets the rlimits (soft and hard, so the command cannot raise them)
// and, on a hybrid host, joins the call's v1 pids group, then execs the
// command — nothing of the command runs before its limits hold. Where the
// call's cgroup carries pids.max or memory.max (containment "cgroup2" with
// those controllers), those replace RLIMIT_NPROC (per user, ignored for
// root) and RLIMIT_AS (virtual memory, not what is used).
//
//	cpu_seconds    RLIMIT_CPU soft N (SIGXCPU), hard N+1 (SIGKILL)
//	file_size_mib  RLIMIT_FSIZE (SIGXFSZ)
//	memory_mib     cgroup memory.max, else RLIMIT_AS
//	pids           cgroup pids.max (v2, else v1), else RLIMIT_NPROC
//	workspace_mib  the workspace's size, after each command and before
//	               each write
//
// A command that hits one ends with LimitMarker as the last line of its
// stderr; a write that would exceed workspace_mib is ErrTooLarge.

// wrapScript sets the rlimits and joins $CAIRN_PIDS_V1 if set; "$@" is
// the command.
func wrapScript(lim limits, pidsCgroup, memCgroup bool, pidsV1 string) string {
	var b strings.Builder
	if pidsV1 != "" {
		fmt.Fprintf(&b, "echo $$ > %s/cgroup.procs || exit 126\n", shellQuote(pidsV1))
	}
	var ul []string
	if lim.CPUSeconds > 0 {
		// soft first: a hard limit below the current soft one is refused
		ul = append(ul, fmt.Sprintf("ulimit -S -t %d", lim.CPUSeconds), fmt.Sprintf("ulimit -H -t %d", lim.CPUSeconds+1))
	}
	if lim.FileSizeMiB > 0 {
		ul = append(ul, fmt.Sprintf("ulimit -H -S -f %d", lim.FileSizeMiB*1024))
	}
	if lim.MemoryMiB > 0 && !memCgroup {
		ul = append(ul, fmt.Sprintf("ulimit -H -S -v %d", lim.MemoryMiB*1024))
	}
	if lim.Pids > 0 && !pidsCgroup {
		ul = append(ul, fmt.Sprintf("ulimit -H -S -u %d", lim.Pids))
	}
	if len(ul) > 0 {
		b.WriteString(strings.Join(ul, " && ") + " || exit 126\n")
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString(`exec "$@"`)
	return b.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LimitMarker is the last line of the stderr of a command that hit limit
// name ("cpu_seconds", "file_size_mib", "memory_mib", "pids",
// "workspace_mib") whose value is value (with its unit).
func LimitMarker(name string, value int, unit string) string {
	return fmt.Sprintf("[%s limit (%d%s) reached]", name, value, unit)
}

// limitHit names the limit a finished command hit, if it hit one: by how
// it died (SIGXCPU, SIGXFSZ; a SIGKILL after N s of CPU at the hard cpu
// limit), by its cgroup's events (oom_kill, pids max), or — without a
// cgroup for it — by the failure the rlimit causes in what it wrote.
func limitHit(lim limits, code int, ps *os.ProcessState, oomKills, pidsMax int64, pidsCgroup, memCgroup bool, stderr string) string {
	sig := func(s syscall.Signal) bool { return code == 128+int(s) }
	switch {
	case lim.CPUSeconds > 0 && (sig(syscall.SIGXCPU) || sig(syscall.SIGKILL) && ps != nil && int((ps.UserTime()+ps.SystemTime()).Seconds()) >= lim.CPUSeconds):
		return LimitMarker("cpu_seconds", lim.CPUSeconds, " s")
	case lim.FileSizeMiB > 0 && sig(syscall.SIGXFSZ):
		return LimitMarker("file_size_mib", lim.FileSizeMiB, " MiB")
	case lim.MemoryMiB > 0 && memCgroup && oomKills > 0,
		lim.MemoryMiB > 0 && !memCgroup && code != 0 && memoryFailure(stderr):
		return LimitMarker("memory_mib", lim.MemoryMiB, " MiB")
	case lim.Pids > 0 && pidsCgroup && pidsMax > 0,
		lim.Pids > 0 && !pidsCgroup && code != 0 && strings.Contains(stderr, "Resource temporarily unavailable"):
		return LimitMarker("pids", lim.Pids, "")
	}
	return ""
}

// memoryFailure reports whether stderr shows an allocation refused (what
// RLIMIT_AS causes: malloc fails, mmap is ENOMEM).
func memoryFailure(stderr string) bool {
	for _, s := range []string{"Cannot allocate memory", "MemoryError", "memory exhausted", "out of memory", "Out of memory", "std::bad_alloc"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// withMarker appends a marker line to stderr.
func withMarker(stderr, marker string) string {
	if stderr != "" && !strings.HasSuffix(stderr, "\n") {
		stderr += "\n"
	}
	return stderr + marker
}

// workspaceBytes is the apparent size of the regular files under root
// (symlinks not followed).
func workspaceBytes(root string) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// checkWorkspace refuses adding extra bytes to a workspace over (or
// brought over) workspace_mib: ErrTooLarge naming the limit.
func (l *Sandbox) checkWorkspace(extra int64) error {
	mib := l.opts.Limits.WorkspaceMiB
	if mib <= 0 {
		return nil
	}
	if used := workspaceBytes(l.root); used+extra > int64(mib)<<20 {
		return fmt.Errorf("%s: the workspace holds %s MiB: %w", LimitMarker("workspace_mib", mib, " MiB"), strconv.FormatFloat(float64(used)/(1<<20), 'f', 1, 64), contracts.ErrTooLarge)
	}
	return nil
}
