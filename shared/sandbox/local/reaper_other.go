//go:build !linux

package local

import "syscall"

// Without Linux there is no subreaper and no cgroup: containment is
// "process-group".

const reaperArg = ""

func reaperUsable() bool { return false }

func intoCgroup(a *syscall.SysProcAttr, fd int) {}
