package dumpable

import (
	"fmt"
	"syscall"
)

// prctl options (linux/prctl.h).
const (
	prGetDumpable = 3
	prSetDumpable = 4
)

// Off marks the calling process not dumpable.
func Off() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", e)
	}
	return nil
}

// Get reports whether the calling process is dumpable.
func Get() (bool, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prGetDumpable, 0, 0)
	if e != 0 {
		return false, fmt.Errorf("prctl(PR_GET_DUMPABLE): %w", e)
	}
	return r != 0, nil
}
