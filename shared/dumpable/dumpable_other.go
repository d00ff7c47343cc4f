//go:build !linux

package dumpable

// Off does nothing outside Linux.
func Off() error { return nil }

// Get reports true outside Linux: nothing was switched off.
func Get() (bool, error) { return true, nil }
