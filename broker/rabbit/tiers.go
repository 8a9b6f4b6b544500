package rabbit

import (
	"fmt"
	"math"
	"time"
)

// tiers are the delay tiers resolution × factor^k, k = 0..levels-1, in
// milliseconds, ascending.
type tiers struct {
	res    int64 // resolution in ms
	factor int64
	ms     []int64
}

func newTiers(c DelayConfig) (tiers, error) {
	res := c.Resolution.Milliseconds()
	if res <= 0 {
		return tiers{}, fmt.Errorf("resolution %s is below 1ms", c.Resolution)
	}
	t := tiers{res: res, factor: int64(c.Factor), ms: make([]int64, c.Levels)}
	v := res
	for k := range c.Levels {
		t.ms[k] = v
		if k+1 < c.Levels {
			if v > math.MaxInt32/int64(c.Factor) { // x-message-ttl is a 32-bit value
				return tiers{}, fmt.Errorf("tier %d (%d ms × %d) exceeds RabbitMQ's TTL range; lower factor or levels", k+1, v, c.Factor)
			}
			v *= int64(c.Factor)
		}
	}
	return t, nil
}

// max is the longest delay the tiers express with at most factor-1 passes
// per tier: resolution × (factor^levels − 1).
func (t tiers) max() time.Duration {
	var sum int64
	for _, ms := range t.ms {
		sum += ms * (t.factor - 1)
	}
	return time.Duration(sum) * time.Millisecond
}

// next picks the tier for a message that still has remaining to wait: the
// remaining delay is rounded up to whole resolutions (never early), then
// the largest tier that fits is taken. It returns the tier and what is left
// after it (a multiple of the resolution, possibly 0).
func (t tiers) next(remaining time.Duration) (tierMS, leftMS int64) {
	r := remaining.Milliseconds()
	if remaining%time.Millisecond != 0 {
		r++
	}
	if r <= 0 {
		return 0, 0
	}
	r = (r + t.res - 1) / t.res * t.res // ceil to the resolution
	k := len(t.ms) - 1
	for k > 0 && t.ms[k] > r {
		k--
	}
	return t.ms[k], r - t.ms[k]
}

// passes counts the tier passes a delay takes.
func (t tiers) passes(d time.Duration) int {
	n := 0
	for d > 0 {
		_, left := t.next(d)
		d = time.Duration(left) * time.Millisecond
		n++
	}
	return n
}
