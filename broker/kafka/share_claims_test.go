package kafka

import (
	"log/slog"
	"testing"

	"github.com/redrive/redrive/broker"
)

// TestShareClaims: in share mode the broker archives a record past its
// delivery limit, so max_claims is at most limit − 1, and off (0) means
// limit − 1, not "never".
func TestShareClaims(t *testing.T) {
	for _, c := range []struct {
		maxClaims, limit, want int
	}{
		{0, 5, 4},  // off: the broker would archive the poison pill
		{3, 5, 3},  // below the limit: kept
		{4, 5, 4},  // the last delivery the broker allows
		{5, 5, 4},  // the broker archives after 5: dead-letter on the 5th
		{9, 3, 2},  // lowered
		{2, 1, 2},  // a limit of 1: nothing to lower to, kept
		{0, 0, 0},  // unknown limit: kept
		{7, 10, 7}, // a larger limit: kept
	} {
		got := shareClaims(broker.Subscription{MaxClaims: c.maxClaims}, c.limit, slog.New(slog.DiscardHandler)).MaxClaims
		if got != c.want {
			t.Errorf("max_claims %d, delivery limit %d: %d, want %d", c.maxClaims, c.limit, got, c.want)
		}
	}
}
