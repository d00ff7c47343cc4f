// Package dumpable keeps a process's memory and environment from other
// processes of the same user: Off sets prctl(PR_SET_DUMPABLE, 0), after which
// /proc/<pid>/environ, mem, maps and ptrace are refused to anything but a
// holder of CAP_SYS_PTRACE (root, as a rule), and the process's /proc files
// belong to root. The runtime (`cairn dev`, every Lambda function) and
// sandboxd call it first thing, so a sandboxed command running as the same
// user cannot read its parents' secrets through /proc/$PPID/environ.
//
// The flag is per process and reset by execve: every binary sets its own.
// On systems other than Linux, Off does nothing and Get reports true.
//
// It may import the standard library.
//
// # Usage
//
//	func main() {
//		if err := dumpable.Off(); err != nil {
//			log.Fatal(err)
//		}
//		…
//	}
package dumpable
