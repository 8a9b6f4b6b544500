package console

import (
	"testing"
	"time"
)

func TestSessions(t *testing.T) {
	now := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)
	s := newSessions(time.Hour, func() time.Time { return now })
	s.max = 3
	a := s.create(User{Name: "a"})
	if got := s.get(a.id); got != a || a.csrf == "" || a.csrf == a.id || len(a.id) < 40 {
		t.Fatalf("get = %+v, want %+v with a random id and CSRF token", got, a)
	}
	if s.get("") != nil || s.get("nope") != nil {
		t.Error("unknown ids give a session")
	}
	now = now.Add(time.Minute)
	b, c := s.create(User{Name: "b"}), s.create(User{Name: "c"})
	d := s.create(User{Name: "d"}) // over the bound: a, the oldest, goes
	if s.get(a.id) != nil || s.get(b.id) == nil || s.get(c.id) == nil || s.get(d.id) == nil {
		t.Error("the bound did not drop the session closest to expiry")
	}
	now = now.Add(2 * time.Hour)
	if s.get(b.id) != nil {
		t.Error("an expired session is still live")
	}
	s.drop(c.id)
	if s.get(c.id) != nil {
		t.Error("a dropped session is still live")
	}
	if len(s.byID) != 1 {
		t.Errorf("%d sessions kept, want 1 (d, expired but not yet swept)", len(s.byID))
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
