package console

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

func TestSessions(t *testing.T) {
	now := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	users := map[string]User{"a": {Name: "a", Token: "token-of-a"}, "b": {Name: "b", Token: "token-of-b", ReadOnly: true}}
	lookup := func(name string) (User, [sha256.Size]byte, bool) {
		u, ok := users[name]
		return u, sha256.Sum256([]byte(u.Token)), ok
	}
	const secret = "a secret the replicas share, 32+ bytes"
	s := newSessions(time.Hour, clock, secret, lookup)
	s.max = 2
	a := s.create(users["a"])
	if got := s.get(a.id); got == nil || got.user != users["a"] || got.csrf != a.csrf || a.csrf == "" || a.csrf == a.id || len(a.id) < 40 {
		t.Fatalf("get = %+v, want %+v with a signed id and a CSRF token", got, a)
	}
	if s.get("") != nil || s.get("nope") != nil || s.get("a.b.c.d") != nil {
		t.Error("malformed ids give a session")
	}
	// Another replica with the same secret accepts it, with the same CSRF
	// token; one with another key does not.
	other := newSessions(time.Hour, clock, secret, lookup)
	if got := other.get(a.id); got == nil || got.csrf != a.csrf || got.user.Name != "a" {
		t.Errorf("a replica with the same secret: %+v", got)
	}
	if newSessions(time.Hour, clock, "", lookup).get(a.id) != nil {
		t.Error("a replica with a random key accepts the session")
	}
	// Tampering: another user's name, another expiry, a wrong signature.
	parts := strings.Split(a.id, ".")
	b := s.create(users["b"])
	bParts := strings.Split(b.id, ".")
	for _, forged := range []string{
		bParts[0] + "." + parts[1] + "." + parts[2] + "." + parts[3],
		parts[0] + ".99999999999." + parts[2] + "." + parts[3],
		parts[0] + "." + parts[1] + "." + parts[2] + "." + bParts[3],
	} {
		if s.get(forged) != nil {
			t.Errorf("forged id %q accepted", forged)
		}
	}
	// A new token ends the user's sessions; an unknown user has none.
	users["a"] = User{Name: "a", Token: "new-token-of-a"}
	if s.get(a.id) != nil {
		t.Error("a session outlived its user's token")
	}
	a = s.create(users["a"])
	delete(users, "b")
	if s.get(b.id) != nil {
		t.Error("a removed user's session is live")
	}
	users["b"] = User{Name: "b", Token: "token-of-b", ReadOnly: true}
	// Logout, here only; the bound forgets the logout closest to expiry.
	s.drop(a.id)
	if s.get(a.id) != nil || other.get(a.id) == nil {
		t.Error("a logged-out session is live here, or dead on the other replica")
	}
	now = now.Add(time.Minute)
	c, d := s.create(users["a"]), s.create(users["b"])
	s.drop(c.id)
	s.drop(d.id) // over the bound: a's logout, the oldest, is forgotten
	if len(s.revoked) != 2 || s.get(a.id) == nil || s.get(c.id) != nil || s.get(d.id) != nil {
		t.Errorf("the bound kept %d logouts; want c's and d's", len(s.revoked))
	}
	now = now.Add(2 * time.Hour)
	if s.get(c.id) != nil || other.get(b.id) != nil {
		t.Error("an expired session is still live")
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/": "/", "/dlq/a.dlq?status=pending": "/dlq/a.dlq?status=pending",
		"//evil.example": "/", "https://evil.example": "/", "/\\evil": "/", "evil": "/", "/a\r\nSet-Cookie: x": "/",
		// Browsers drop tabs and newlines (WHATWG URL parsing): these
		// would be //evil.example.
		"/\t/evil.example": "/", "/\n/evil.example": "/", "/\r/evil.example": "/", "\t//evil.example": "/",
		// Every other control character, spaces, DEL and non-ASCII.
		"/\x00/evil.example": "/", "/\x0b/evil": "/", "/\x1f": "/", "/\x7f": "/", "/ /evil.example": "/", "/\u00a0/evil": "/",
		"/a\\b": "/", "/dlq/x?next=\\\\evil": "/", "/%09/evil.example": "/%09/evil.example", "/dlq/a.dlq#top": "/dlq/a.dlq#top",
		"/:/x": "/:/x", "/https://evil.example": "/https://evil.example",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 30 * 24 * time.Hour: "30d", 405708779 * time.Nanosecond: "406ms", 1440 * time.Millisecond: "1.4s", 150 * time.Second: "2m30s",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%s) = %q, want %q", d, got, want)
		}
	}
}
