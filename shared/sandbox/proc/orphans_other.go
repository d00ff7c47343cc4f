//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// Without /proc and pidfds a recorded pid cannot be told from a reused
// one: pid files are not written, and nothing foreign is signalled.
func identify(int) (ident, error) { return ident{}, errors.ErrUnsupported }

func (p *Provider) stopForeign(ident) (bool, error) { return false, syscall.ENOSYS }
