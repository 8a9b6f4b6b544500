package testenv

import (
	"runtime"
	"testing"
)

// Cost is what one call of a function costs, measured by testing.Benchmark.
type Cost struct {
	NsPerOp, AllocsPerOp, BytesPerOp int64
}

// Measure runs fn under testing.Benchmark (the -test.benchtime of the run,
// 1 s by default) and returns its cost per call.
func Measure(fn func()) Cost {
	r := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fn()
		}
	})
	return Cost{NsPerOp: r.NsPerOp(), AllocsPerOp: r.AllocsPerOp(), BytesPerOp: r.AllocedBytesPerOp()}
}

// WithinRatio fails t unless got allocates at most ratio times as many
// objects and bytes per call as base, which are deterministic; the time
// ratio is only logged (a shared machine's timings are not).
func WithinRatio(t testing.TB, what string, base, got func(), ratio float64) (b, g Cost) {
	t.Helper()
	b, g = Measure(base), Measure(got)
	t.Logf("%s: %d ns/op, %d allocs/op, %d B/op against %d ns/op, %d allocs/op, %d B/op: time ×%.2f, allocations ×%.2f, bytes ×%.2f",
		what, g.NsPerOp, g.AllocsPerOp, g.BytesPerOp, b.NsPerOp, b.AllocsPerOp, b.BytesPerOp,
		float64(g.NsPerOp)/float64(max(b.NsPerOp, 1)), float64(g.AllocsPerOp)/float64(max(b.AllocsPerOp, 1)),
		float64(g.BytesPerOp)/float64(max(b.BytesPerOp, 1)))
	if float64(g.AllocsPerOp) > ratio*float64(max(b.AllocsPerOp, 1)) {
		t.Errorf("%s: %d allocations a call, more than %.0f× the %d of the baseline", what, g.AllocsPerOp, ratio, b.AllocsPerOp)
	}
	if float64(g.BytesPerOp) > ratio*float64(max(b.BytesPerOp, 1)) {
		t.Errorf("%s: %d bytes allocated a call, more than %.0f× the %d of the baseline", what, g.BytesPerOp, ratio, b.BytesPerOp)
	}
	return b, g
}

// Allocated returns the bytes the process allocated while fn ran (the
// runtime's TotalAlloc): an upper bound of what fn needed, counting what
// other goroutines allocated meanwhile, so a test bounding it should run
// alone (not t.Parallel).
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
