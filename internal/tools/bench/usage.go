package bench

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

// sub returns u - v.
func (u usage) sub(v usage) usage {
	return usage{cpu: u.cpu - v.cpu, mallocs: u.mallocs - v.mallocs}
}

// add returns u + v.
func (u usage) add(v usage) usage {
	return usage{cpu: u.cpu + v.cpu, mallocs: u.mallocs + v.mallocs}
}

// meter measures the time, CPU and allocations of one measurement.
type meter struct {
	start time.Time
	u0    usage
}

func startMeter() meter {
	u := readUsage()
	return meter{start: time.Now(), u0: u}
}

// stop returns the elapsed time and the process's usage since start.
func (m meter) stop() (time.Duration, usage) {
	el := time.Since(m.start)
	return el, readUsage().sub(m.u0)
}

// row fills a Row's rate, CPU and allocation figures.
func row(scenario, brokerName, client string, n int, elapsed time.Duration, u usage) Row {
	r := Row{Scenario: scenario, Broker: brokerName, Client: client, Messages: n, Elapsed: elapsed}
	if elapsed > 0 {
		r.Rate = float64(n) / elapsed.Seconds()
	}
	if n > 0 {
		r.AllocsPerMsg = float64(u.mallocs) / float64(n)
		r.CPUPerMsg = u.cpu / time.Duration(n)
	}
	return r
}

// perCheck divides a row's per-message costs by k: the scrape and monitor
// rows repeat their work over the same "messages" k times.
func (r Row) perCheck(k int) Row {
	k = max(k, 1)
	r.AllocsPerMsg /= float64(k)
	r.CPUPerMsg /= time.Duration(k)
	return r
}
