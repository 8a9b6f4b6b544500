package kafka

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// A connect error says how long it actually waited: refused at once, it
// does not claim to have waited the whole connect timeout.
func TestUnreachableSaysHowLongItWaited(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens: refused at once
	_, err = New(t.Context(), Config{Brokers: []string{addr}, ConnectTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		t.Fatal("New succeeded against a closed port")
	}
	if msg := err.Error(); !strings.Contains(msg, "failed after ") || !strings.Contains(msg, "before the 10s connect timeout") || strings.Contains(msg, "within 10s") {
		t.Errorf("error %q does not say it gave up early", msg)
	}
	if got := waited(11*time.Second, 10*time.Second); got != "gave up after 10s" {
		t.Errorf("waited(timeout) = %q", got)
	}
}
