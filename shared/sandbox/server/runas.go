package server

import (
	"fmt"
	"syscall"

	"github.com/cairnrun/cairn/shared/sandbox/local"
)

// EnvRunAs names the variable choosing the user commands run as:
// "uid:gid" (numbers), or "self" for sandboxd's own user. Unset, it is
// DefaultRunAs when sandboxd runs as root and "self" otherwise; a uid other
// than sandboxd's own needs root. The parsing, the ownership of what tools
// create and the reach checks are shared/sandbox/local's (runas.go).
const EnvRunAs = "SANDBOXD_RUN_AS"

// DefaultRunAs is the user of commands when sandboxd runs as root: nobody.
const DefaultRunAs = local.DefaultRunAs

// runAs returns the credential of commands for the value of EnvRunAs, given
// sandboxd's effective uid; nil means sandboxd's own user.
func runAs(value string, euid int) (*syscall.Credential, error) {
	c, err := local.RunAs(value, euid)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", EnvRunAs, value, err)
	}
	return c, nil
}
