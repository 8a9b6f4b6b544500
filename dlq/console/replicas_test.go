package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/redrive/redrive/dlq/console"
)

// TestSessionAcrossReplicas: two consoles (replicas behind one load
// balancer) given the same session secret accept each other's sessions
// and CSRF tokens; a console with its own random key does not.
func TestSessionAcrossReplicas(t *testing.T) {
	s := stores[0].Open(t)
	const secret = "a secret the replicas share, 32+ bytes"
	shared := func(c *console.Config) { c.SessionSecret = secret }
	a, b := newFixture(t, s, shared), newFixture(t, s, shared)
	other := newFixture(t, s, nil)

	c := a.client().login(opToken) // the cookie jar sends 127.0.0.1's cookies to every port
	c.f = b
	expect(t, "the DLQ list on b", c.get("/"), http.StatusOK, "alice")
	c.f = other
	if r := c.get("/"); r.status != http.StatusSeeOther {
		t.Errorf("a replica with its own key = %d, want a redirect to /login", r.status)
	}
	c.f = b
	expect(t, "a post on b with a's CSRF token", c.post("/logout", url.Values{}), http.StatusSeeOther)
	if r := c.get("/"); r.status != http.StatusSeeOther {
		t.Errorf("after the logout on b = %d, want a redirect to /login", r.status)
	}
	if _, err := console.New(console.Config{Ops: a.ops, Jobs: a.srv.Jobs(), InsecureNoAuth: true, SessionSecret: "short"}); err == nil {
		t.Error("a session secret of 5 bytes is accepted")
	}
}
