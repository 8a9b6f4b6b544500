package console

import (
	"sync"
	"time"
)

// Login throttling: a client with MaxLoginFailures wrong tokens within
// LoginWindow is refused (429) until the window of its first failure has
// passed, so that tokens cannot be guessed at speed. Refused attempts
// neither count nor extend the lockout: a correct token is let in at the
// latest when the current window ends. A client is its device cookie when
// it carries a valid one (a browser that logged in before), else its
// address (behind Config.TrustedProxies, the one they forward).
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

// succeed forgets the failures of client key.
func (t *throttle) succeed(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.fails, key)
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
