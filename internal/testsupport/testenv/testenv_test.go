package testenv

import (
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Names are the test's own (its name, then a random suffix), unique per
// call, and valid on every service.
func TestName(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^rt-[a-z0-9-]{0,24}-[0-9a-f]{8}$`)
	a, b := Name(t), Name(t)
	if a == b {
		t.Errorf("two names alike: %s", a)
	}
	if !valid.MatchString(a) || !strings.HasPrefix(a, "rt-testname-") {
		t.Errorf("Name = %q, want rt-testname-<8 hex>", a)
	}
	t.Run("Sub test/with spaces & a very long name that goes on", func(t *testing.T) {
		if n := Name(t); !valid.MatchString(n) {
			t.Errorf("Name = %q, not %s", n, valid)
		}
	})
}

// The URL of a service is its variable, else its default; the message of
// an unreachable one hides the password.
func TestServiceURL(t *testing.T) {
	s := Service{Name: "X", Env: "REDRIVE_TESTENV_X", Default: "amqp://u:pw@127.0.0.1:1/"}
	t.Setenv(s.Env, "")
	if s.URL() != s.Default {
		t.Errorf("URL unset = %q, want the default", s.URL())
	}
	t.Setenv(s.Env, "amqp://u:secret@10.0.0.1:5672/")
	if s.URL() != "amqp://u:secret@10.0.0.1:5672/" {
		t.Errorf("URL = %q, want the variable's", s.URL())
	}
	if r := redacted(s.URL()); strings.Contains(r, "secret") {
		t.Errorf("redacted = %q", r)
	}
}

// ClosedAddr's port is outside the ephemeral range outgoing connections
// take theirs from, and free: a server can listen on it.
func TestClosedAddr(t *testing.T) {
	t.Parallel()
	for range 20 {
		addr := ClosedAddr(t)
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(p)
		if err != nil || port < closedPortMin || port >= closedPortMax {
			t.Fatalf("ClosedAddr = %s, want a port in [%d, %d)", addr, closedPortMin, closedPortMax)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on ClosedAddr's %s: %v", addr, err)
		}
		_ = ln.Close()
	}
}
