package console

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// Issue 40's payload: 20 KB nested 9,999 levels deep, against a flat
// 20 KB JSON payload.
var (
	flatPayload = testenv.FlatJSON(20 << 10)
	deepPayload = testenv.NestedJSON(9999)
)

// TestRenderPayloadCostFollowsSize: rendering the 9,999-deep payload
// costs at most twice the allocations (objects and bytes) of the flat one;
// the time ratio is logged (BENCHMARKS.md records it).
func TestRenderPayloadCostFollowsSize(t *testing.T) {
	for _, p := range [][]byte{flatPayload, deepPayload} {
		if r := renderPayload(p); r.Kind != kindJSON || len(r.Text) > maxShown+200 {
			t.Fatalf("renderPayload(%.20s…) = %s, %d bytes", p, r.Kind, len(r.Text))
		}
	}
	if r := renderPayload(deepPayload); !strings.Contains(r.Text, "[… 19934 bytes nested deeper than 32 levels …]") {
		t.Fatalf("the deep payload shows no depth marker:\n%s", r.Text)
	}
	testenv.WithinRatio(t, "console: 9,999-deep payload against flat", func() { renderPayload(flatPayload) }, func() { renderPayload(deepPayload) }, 2)
}

// BenchmarkRenderPayload: the console's rendering of the flat and the
// deep payload.
func BenchmarkRenderPayload(b *testing.B) {
	for _, p := range []struct {
		name string
		v    []byte
	}{{"flat-20KB", flatPayload}, {"deep-9999", deepPayload}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(p.v)))
			for b.Loop() {
				renderPayload(p.v)
			}
		})
	}
}
