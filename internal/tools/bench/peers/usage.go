package main

import (
	"runtime"
	"time"
)

// usage is the process's CPU time (user+system) and heap allocations so
// far.
type usage struct {
	cpu     time.Duration
	mallocs uint64
}

// readUsage returns the process's usage now: allocations from
// runtime.MemStats, CPU time from getrusage where there is one
// (cpuMeasured; 0 elsewhere).
func readUsage() usage {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{cpu: processCPU(), mallocs: ms.Mallocs}
}
