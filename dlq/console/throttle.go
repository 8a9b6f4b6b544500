package console

import (
	"net"
	"sync"
	"time"
)

// Login throttling: a client (by remote IP) with MaxLoginFailures wrong
// tokens within LoginWindow is refused (429) until the window of its
// first failure has passed, so that tokens cannot be guessed at speed.
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

// client is the throttled identity of a remote address: its IP.
func client(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}

// blocked reports whether remote may not try now, and for how long.
func (t *throttle) blocked(remote string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.fails[client(remote)]
	if !ok {
		return 0, false
	}
	left := LoginWindow - t.now().Sub(f.since)
	if left <= 0 {
		delete(t.fails, client(remote))
		return 0, false
	}
	return left, f.n >= MaxLoginFailures
}

// fail counts a failed login of remote.
func (t *throttle) fail(remote string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now, key := t.now(), client(remote)
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

// succeed forgets remote's failures.
func (t *throttle) succeed(remote string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.fails, client(remote))
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
