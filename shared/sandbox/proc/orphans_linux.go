package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// identify reads the process's start time and the boot's id.
func identify(pid int) (ident, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ident{}, err
	}
	// Fields after the command name (which may hold spaces and parens):
	// state is field 3, start time field 22.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return ident{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(raw)[i+1:])
	if len(f) < 20 {
		return ident{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ident{}, err
	}
	return ident{pid: pid, start: f[19], boot: strings.TrimSpace(string(boot))}, nil
}

// stopForeign stops the recorded process if it is still the one recorded:
// SIGTERM, StopGrace, SIGKILL, each through a pidfd opened before the
// identity check, so a pid reused meanwhile is never signalled. It reports
// whether it stopped a process (false: gone already, or the pid is another
// process's now).
func (p *Provider) stopForeign(id ident) (bool, error) {
	fd, err := unix.PidfdOpen(id.pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pidfd_open(%d): %w", id.pid, err)
	}
	defer unix.Close(fd)
	now, err := identify(id.pid)
	if err != nil || now != id {
		return false, nil // exited, or a reused pid: not ours
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("signalling pid %d: %w", id.pid, err)
	}
	if exited(fd, int(p.cfg.StopGrace.Milliseconds())) {
		return true, nil
	}
	p.log.Warn("recorded sandboxd ignored SIGTERM, killing it", "pid", id.pid)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return false, fmt.Errorf("killing pid %d: %w", id.pid, err)
	}
	exited(fd, -1)
	return true, nil
}

// exited waits up to ms milliseconds (-1: for ever) for the pidfd's process
// to exit.
func exited(fd, ms int) bool {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}
