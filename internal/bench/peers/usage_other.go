//go:build !unix

package main

import (
	"runtime"
	"time"
)

// cpuMeasured reports whether readUsage reads the CPU time.
const cpuMeasured = false

// usage is the process's CPU time (user+system; 0 where getrusage is not
// available) and heap allocations so far.
type usage struct {
	cpu     time.Duration
	mallocs uint64
}

// readUsage returns the process's usage now.
func readUsage() usage {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{mallocs: ms.Mallocs}
}
