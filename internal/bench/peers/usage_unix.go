//go:build unix

package main

import (
	"runtime"
	"syscall"
	"time"
)

// cpuMeasured reports whether readUsage reads the CPU time.
const cpuMeasured = true

// usage is the process's CPU time (user+system) and heap allocations so
// far.
type usage struct {
	cpu     time.Duration
	mallocs uint64
}

// readUsage returns the process's usage now.
func readUsage() usage {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{mallocs: ms.Mallocs}
	}
	return usage{
		cpu:     time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		mallocs: ms.Mallocs,
	}
}
