//go:build unix

package heartbeat

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with pid runs on this host (one
// of another user counts).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
