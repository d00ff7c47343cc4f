//go:build !linux

package sandboxtest

import (
	"testing"
	"time"
)

// HangGuard bounds waits that end much sooner on any machine.
const HangGuard = time.Minute

// Exits is unsupported without Linux's /proc and pidfds.
func Exits(t *testing.T, pid int) bool {
	t.Helper()
	t.Skip("waiting for a process's exit needs Linux")
	return false
}
