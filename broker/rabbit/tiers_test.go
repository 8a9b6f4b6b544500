package rabbit

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTiers(t *testing.T) {
	tr, err := newTiers(DelayConfig{Resolution: 100 * time.Millisecond, Factor: 4, Levels: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.ms, []int64{100, 400, 1600, 6400}; !equal(got, want) {
		t.Fatalf("tiers = %v, want %v", got, want)
	}
	if got, want := tr.max(), 25500*time.Millisecond; got != want {
		t.Fatalf("max = %s, want %s", got, want)
	}
	tests := []struct {
		remaining   time.Duration
		tier, left  int64
		totalPasses int
	}{
		{0, 0, 0, 0},
		{-time.Second, 0, 0, 0},
		{time.Millisecond, 100, 0, 1},            // below one resolution: one smallest pass
		{100 * time.Millisecond, 100, 0, 1},      // exact
		{150 * time.Millisecond, 100, 100, 2},    // rounded up to 200
		{350 * time.Millisecond, 400, 0, 1},      // rounded up to 400: one pass, not four
		{3700 * time.Millisecond, 1600, 2100, 4}, // 37 = 2×16 + 1×4 + 1
		{25500 * time.Millisecond, 6400, 19100, 12},
		{60 * time.Second, 6400, 53600, 12}, // beyond max: more top-tier passes
	}
	for _, tt := range tests {
		tier, left := tr.next(tt.remaining)
		if tier != tt.tier || left != tt.left {
			t.Errorf("next(%s) = (%d, %d), want (%d, %d)", tt.remaining, tier, left, tt.tier, tt.left)
		}
		if got := tr.passes(tt.remaining); got != tt.totalPasses {
			t.Errorf("passes(%s) = %d, want %d", tt.remaining, got, tt.totalPasses)
		}
	}
	// Never early, at most one resolution late, at most factor-1 passes per
	// tier within max.
	for ms := int64(1); ms <= 25500; ms += 7 {
		d := time.Duration(ms) * time.Millisecond
		var total int64
		per := map[int64]int{}
		for r := d; r > 0; {
			tier, left := tr.next(r)
			total += tier
			per[tier]++
			r = time.Duration(left) * time.Millisecond
		}
		if total < ms || total-ms >= 100 {
			t.Fatalf("delay %dms waits %dms: early or more than one resolution late", ms, total)
		}
		for tier, n := range per {
			if n > 3 {
				t.Fatalf("delay %dms: %d passes of tier %d, want at most factor-1 = 3", ms, n, tier)
			}
		}
	}
}

func TestTiersRejectOverflow(t *testing.T) {
	if _, err := newTiers(DelayConfig{Resolution: time.Second, Factor: 10, Levels: 12}); err == nil {
		t.Fatal("want an error for tiers beyond the 32-bit TTL range")
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRouteKey(t *testing.T) {
	tr, err := newTiers(DelayConfig{Resolution: 100 * time.Millisecond, Factor: 4, Levels: 3})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		d      time.Duration
		key    string
		left   int64
		stored int
	}{
		{time.Millisecond, "1.0.0.q.g", 0, 1},        // below one resolution: one pass
		{3700 * time.Millisecond, "1.1.2.q.g", 0, 3}, // 37 = 1 + 1×4 + 2×16
		{1600 * time.Millisecond, "0.0.1.q.g", 0, 1}, // one queue, two digit-0 levels
		{350 * time.Millisecond, "0.1.0.q.g", 0, 1},  // rounded up to 4 resolutions
		{7 * time.Second, "3.3.3.q.g", 700, 3},       // 70 > 63: the most the route holds, 7 units left
		{6300 * time.Millisecond, "3.3.3.q.g", 0, 3}, // exactly the maximum
	}
	for _, tt := range tests {
		r := tr.routeKey(tt.d, "q.g")
		if r.key != tt.key || r.leftMS != tt.left || r.stored != tt.stored {
			t.Errorf("routeKey(%s) = %q, %d, %d; want %q, %d, %d", tt.d, r.key, r.leftMS, r.stored, tt.key, tt.left, tt.stored)
		}
	}
	if got := tr.routeBinding("q.g"); got != "*.*.*.q.g" {
		t.Errorf("routeBinding = %q", got)
	}
}

// TestRouteExpiration: the first queue of a route holds a message for its
// TTL less what rounding the delay up to whole resolutions added, so the
// route's queues hold it for the delay itself; nothing when rounding added
// nothing or the delay exceeds the route.
func TestRouteExpiration(t *testing.T) {
	tr, err := newTiers(DelayConfig{Resolution: 100 * time.Millisecond, Factor: 4, Levels: 3}) // 100, 400, 1600 ms
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{time.Millisecond, "1"},                        // one resolution, 99 ms added
		{time.Microsecond, "1"},                        // rounded up to a millisecond first: never early
		{3700 * time.Millisecond, ""},                  // whole resolutions: the TTLs are exact
		{3650 * time.Millisecond, "50"},                // 1.1.2: the first queue, 100 ms, less 50
		{350 * time.Millisecond, "350"},                // 0.1.0: the 400 ms queue less 50
		{1550 * time.Millisecond, "1550"},              // 0.0.1: the 1600 ms queue less 50
		{6250 * time.Millisecond, "250"},               // 3.3.3: the 300 ms queue less 50
		{6300 * time.Millisecond, ""},                  // the route's maximum, exactly
		{7050 * time.Millisecond, ""},                  // over the route: the consumer waits the rest
		{0, ""},                                        // no delay
		{1599*time.Millisecond + time.Microsecond, ""}, // 1600 ms once rounded to the millisecond: whole resolutions
	} {
		r := tr.routeKey(tt.d, "q")
		if r.expire != tt.want {
			t.Errorf("routeKey(%s).expire = %q, want %q", tt.d, r.expire, tt.want)
		}
		// The route holds the message no less than the delay: the first
		// queue's expiration plus the other queues' TTLs.
		if tt.want == "" {
			continue
		}
		var held time.Duration
		first := true
		for k, digit := range strings.Split(r.key, ".")[:3] {
			d, _ := strconv.Atoi(digit)
			if d == 0 {
				continue
			}
			ttl := time.Duration(int64(d)*tr.ms[k]) * time.Millisecond
			if first {
				ms, _ := strconv.Atoi(tt.want)
				ttl, first = time.Duration(ms)*time.Millisecond, false
			}
			held += ttl
		}
		if held < tt.d || held >= tt.d+time.Millisecond {
			t.Errorf("%s: the route holds it %s", tt.d, held)
		}
	}
}

// TestRouteTenMilliseconds: route mode at 10 ms resolution covers 24 h
// with at most 64 queues (factor 4, 12 levels: 36), validates, and rounds
// a delay up to whole 10 ms units, never down.
func TestRouteTenMilliseconds(t *testing.T) {
	dc := DelayConfig{Mode: DelayRoute, Resolution: 10 * time.Millisecond, Factor: 4, Levels: 12}
	if err := (Config{Delay: dc}).WithDefaults().Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	tr, err := newTiers(dc)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.max(); got < 24*time.Hour || dc.Levels*(dc.Factor-1) > 64 {
		t.Fatalf("range %s with %d queues", got, dc.Levels*(dc.Factor-1))
	}
	for _, tt := range []struct {
		d      time.Duration
		key    string
		stored int
	}{
		{15 * time.Millisecond, "2.0.0.0.0.0.0.0.0.0.0.0.q", 1},                  // 1.5 units → 2
		{60 * time.Second, "0.0.3.1.3.1.1.0.0.0.0.0.q", 5},                       // 6000 units
		{24 * time.Hour, "0.0.0.0.2.1.1.3.3.0.0.2.q", 6},                         // 8,640,000 units
		{time.Millisecond, "1.0.0.0.0.0.0.0.0.0.0.0.q", 1},                       // below one unit: one unit
		{10*time.Millisecond + time.Microsecond, "2.0.0.0.0.0.0.0.0.0.0.0.q", 1}, // never early
	} {
		r := tr.routeKey(tt.d, "q")
		if r.key != tt.key || r.leftMS != 0 || r.stored != tt.stored {
			t.Errorf("routeKey(%s) = %q, %d, %d; want %q, 0, %d", tt.d, r.key, r.leftMS, r.stored, tt.key, tt.stored)
		}
	}
}
