package rabbit

import (
	"testing"

	"github.com/redrive/redrive/broker"
)

// TestConfirmWindowSteps: the channel limit follows the deliveries waiting
// for a confirm in quarters of the prefetch, raised at once, lowered only
// two quarters down or to none, never past twice the prefetch.
func TestConfirmWindowSteps(t *testing.T) {
	tests := []struct {
		name            string
		base, set, wait int
		classic         bool
		wantLimit       int
		wantChange      bool
	}{
		{"none waiting", 64, 64, 0, true, 64, false},
		{"one raises a quarter", 64, 64, 1, true, 80, true},
		{"a quarter stays", 64, 80, 16, true, 80, false},
		{"one more raises", 64, 80, 17, true, 96, true},
		{"a quarter down stays", 64, 96, 10, true, 96, false},
		{"two quarters down lowers", 64, 112, 10, true, 80, true},
		{"none lowers to the prefetch", 64, 80, 0, true, 64, true},
		{"capped at the headroom", 64, 96, 500, true, 128, true},
		{"capped and set", 64, 128, 500, true, 128, false},
		{"small prefetch steps by one", 3, 3, 2, true, 5, true},
		{"headroom within the protocol's bound", broker.MaxPrefetch - 10, broker.MaxPrefetch - 10, 50, true, broker.MaxPrefetch, true},
		{"quorum: no channel limit", 64, 64, 30, false, 64, false},
		{"prefetch 0: no limit at all", 0, 0, 30, true, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newConfirmWindow(tt.base, tt.classic)
			w.limit = tt.set
			w.add(int64(tt.wait))
			limit, change := w.next()
			if limit != tt.wantLimit || change != tt.wantChange {
				t.Fatalf("next() = %d, %v; want %d, %v", limit, change, tt.wantLimit, tt.wantChange)
			}
		})
	}
}
