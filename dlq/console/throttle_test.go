package console

import (
	"fmt"
	"testing"
	"time"
)

func TestThrottle(t *testing.T) {
	now := time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)
	th := newThrottle(func() time.Time { return now })
	const a, b = "address 10.0.0.1", "address 10.0.0.2"
	for i := range MaxLoginFailures {
		if _, blocked := th.blocked(a); blocked {
			t.Fatalf("blocked after %d failures, want after %d", i, MaxLoginFailures)
		}
		th.fail(a)
		now = now.Add(time.Second)
	}
	left, blocked := th.blocked(a)
	if !blocked || left != LoginWindow-MaxLoginFailures*time.Second {
		t.Fatalf("blocked = %v (%s left), want blocked for the rest of the window", blocked, left)
	}
	if _, blocked := th.blocked(b); blocked {
		t.Error("another client is blocked")
	}
	// Attempts during the lockout are refused without counting: the
	// lockout ends with the window of the first failure, however many
	// came meanwhile.
	for range 50 {
		now = now.Add(time.Second)
		if _, blocked := th.blocked(a); !blocked && now.Before(time.Date(2025, 1, 15, 10, 1, 0, 0, time.UTC)) {
			t.Fatal("unblocked before the window ended")
		}
	}
	now = time.Date(2025, 1, 15, 10, 1, 0, 0, time.UTC) // the window of the first failure ends
	if _, blocked := th.blocked(a); blocked {
		t.Error("still blocked after the window")
	}
	for i := range maxThrottled + 10 {
		th.fail(fmt.Sprintf("10.1.%d.%d:1", i/256, i%256))
	}
	if len(th.fails) > maxThrottled {
		t.Errorf("%d clients remembered, want at most %d", len(th.fails), maxThrottled)
	}
}
