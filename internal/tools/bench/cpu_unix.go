//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuMeasured reports whether processCPU reads the CPU time.
const cpuMeasured = true

// processCPU returns the user+system CPU time of the process (all its
// threads) so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
