//go:build !unix

package bench

import "time"

// cpuMeasured reports whether processCPU reads the CPU time.
const cpuMeasured = false

// processCPU returns 0: there is no getrusage here.
func processCPU() time.Duration { return 0 }
