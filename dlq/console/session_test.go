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
	// Logout, here only.
	s.drop(a.id)
	if s.get(a.id) != nil || other.get(a.id) == nil {
		t.Error("a logged-out session is live here, or dead on the other replica")
	}
	now = now.Add(time.Minute)
	c, d, live := s.create(users["a"]), s.create(users["b"]), s.create(users["b"])
	s.drop(c.id)
	s.drop(d.id) // over the bound: a, the user with the most logouts, is revoked by expiry
	if len(s.revoked) != 1 || len(s.before) != 1 || s.get(a.id) != nil || s.get(c.id) != nil || s.get(d.id) != nil || s.get(live.id) == nil {
		t.Errorf("over the bound: %d logouts and %d users revoked by expiry remembered; a %v, c %v, d %v, b's live session %v",
			len(s.revoked), len(s.before), s.get(a.id) == nil, s.get(c.id) == nil, s.get(d.id) == nil, s.get(live.id) != nil)
	}
	// A's next session, in the same second as c, lives.
	if e := s.create(users["a"]); s.get(e.id) == nil {
		t.Error("a session created after its user was revoked by expiry is dead")
	}
	now = now.Add(2 * time.Hour)
	if s.get(c.id) != nil || other.get(b.id) != nil {
		t.Error("an expired session is still live")
	}
	s.drop(s.create(users["b"]).id)
	s.drop(s.create(users["b"]).id) // over the bound: the expired are forgotten
	if len(s.revoked) != 2 || len(s.before) != 0 {
		t.Errorf("after every expiry: %d logouts, %d users revoked by expiry remembered", len(s.revoked), len(s.before))
	}
}

// TestLogoutNeverComesBack is issue 40's case at the real bound: an
// operator's logged-out session stays dead through 10,050 viewer logins
// and logouts (it used to be forgotten at 10,000), while memory stays
// bounded and the operator's other sessions live.
func TestLogoutNeverComesBack(t *testing.T) {
	now := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)
	users := map[string]User{"op": {Name: "op", Token: "token-of-op"}, "viewer": {Name: "viewer", Token: "token-of-viewer", ReadOnly: true}}
	s := newSessions(SessionTTL, func() time.Time { return now }, "", func(name string) (User, [sha256.Size]byte, bool) {
		u, ok := users[name]
		return u, sha256.Sum256([]byte(u.Token)), ok
	})
	out, in := s.create(users["op"]), s.create(users["op"])
	s.drop(out.id)
	for i := range maxRevoked + 50 {
		if i%100 == 0 {
			now = now.Add(time.Second)
		}
		v := s.create(users["viewer"])
		s.drop(v.id)
		if s.get(v.id) != nil {
			t.Fatalf("viewer logout %d is live", i)
		}
		if s.get(out.id) != nil {
			t.Fatalf("the operator's logged-out session came back after %d viewer logouts", i+1)
		}
	}
	if s.get(in.id) == nil {
		t.Error("the operator's other session ended")
	}
	if len(s.revoked) > maxRevoked || len(s.before) > 1 {
		t.Errorf("%d logouts and %d users revoked by expiry remembered", len(s.revoked), len(s.before))
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
