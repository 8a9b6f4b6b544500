package console

import (
	"sync"
	"time"
)

// Login throttling: MaxLoginFailures wrong tokens within LoginWindow block
// a client (429) until the window of its first failure has passed, so that
// tokens cannot be guessed at speed. Refused attempts neither count nor
// extend the lockout; a correct token is let in at the latest when the
// current window ends. A successful login clears nothing: failures only
// age out, so a token one has (a viewer's) buys no fresh guesses at
// another (an operator's).
//
// Every wrong token counts against the client's address (behind
// Config.TrustedProxies, the one they forward), whatever cookie it
// carries. A browser with a valid device cookie (devices.go) is judged,
// and also counted, on its own key instead: the cookie's user at that
// address. So wrong tokens from others at the same address (a NAT, a
// proxy not configured as trusted) do not lock out a browser that logged
// in before, while cookies one can mint by logging in (any viewer can)
// add at most MaxLoginFailures guesses per user and address per window.
const (
	MaxLoginFailures = 5
	LoginWindow      = time.Minute
	maxThrottled     = 10000 // clients remembered; beyond, the oldest window is dropped
)

// throttle counts failed logins per client.
type throttle struct {
	mu    sync.Mutex
	now   func() time.Time
	fails map[string]*failures
}

type failures struct {
	since time.Time // the first failure of the window
	n     int
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, fails: map[string]*failures{}}
}

// blocked reports whether client key may not try now, and for how long.
func (t *throttle) blocked(key string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.fails[key]
	if !ok {
		return 0, false
	}
	left := LoginWindow - t.now().Sub(f.since)
	if left <= 0 {
		delete(t.fails, key)
		return 0, false
	}
	return left, f.n >= MaxLoginFailures
}

// fail counts a failed login of client key.
func (t *throttle) fail(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	f, ok := t.fails[key]
	if !ok || now.Sub(f.since) >= LoginWindow {
		if !ok && len(t.fails) >= maxThrottled {
			t.evictOldest()
		}
		f = &failures{since: now}
		t.fails[key] = f
	}
	f.n++
}

func (t *throttle) evictOldest() {
	var oldest string
	var at time.Time
	for k, f := range t.fails {
		if oldest == "" || f.since.Before(at) {
			oldest, at = k, f.since
		}
	}
	delete(t.fails, oldest)
}
