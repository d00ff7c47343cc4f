//go:build linux

package sandboxtest

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// HangGuard bounds waits that end much sooner on any machine (a killed
// process's exit): it only turns a hang into a failure, it is not a margin
// a slow run could reach.
const HangGuard = time.Minute

// Exits waits for process pid to end (a zombie has ended) and reports
// whether it did within HangGuard. Signal delivery is asynchronous, so
// this waits for the event: a pidfd, readable once the process has exited
// (it need not be our child), or where pidfds are unavailable, /proc polled
// a bounded number of times.
func Exits(t *testing.T, pid int) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return true
	case err == nil:
		defer unix.Close(fd)
		for {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(HangGuard/time.Millisecond))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				t.Fatalf("polling the pidfd of %d: %v", pid, err)
			}
			return n == 1
		}
	}
	const step = 10 * time.Millisecond
	for range int(HangGuard / step) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z") {
			return true
		}
		time.Sleep(step)
	}
	return false
}
