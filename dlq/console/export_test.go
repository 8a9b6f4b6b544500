package console

import "time"

// SetMaxRevoked sets how many logouts c remembers one by one (maxRevoked),
// so that a test over HTTP reaches the bound in a few requests.
func SetMaxRevoked(c *Console, n int) { c.sessions.max = n }

// SetClock makes now the clock of c's sessions and login throttle.
func SetClock(c *Console, now func() time.Time) {
	c.now, c.sessions.now, c.throttle.now = now, now, now
}
