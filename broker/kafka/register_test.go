package kafka

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/config"
)

// The defaults the configuration fills in (and `redrive config check`
// prints) are the backend's own: a configuration that sets nothing maps to
// the same client as a Config that sets nothing.
func TestConfigDefaultsAreTheBackends(t *testing.T) {
	var c config.Config
	c.ApplyDefaults()
	got, err := configFrom(c.Kafka, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	got, want := got.withDefaults(), Config{}.withDefaults()
	if got.ClientID != want.ClientID || got.CommitInterval != want.CommitInterval || got.FetchMaxWait != want.FetchMaxWait ||
		got.HeartbeatInterval != want.HeartbeatInterval || got.SessionTimeout != want.SessionTimeout ||
		got.RebalanceTimeout != want.RebalanceTimeout || got.Partitions != want.Partitions || got.ReplicationFactor != want.ReplicationFactor {
		t.Errorf("from the configuration's defaults:\n%+v\nthe backend's defaults:\n%+v", got, want)
	}
}

// kafka.foreign_dlqs reach the backend as topic → format, the default
// format (auto) filled in.
func TestConfigForeignDLQs(t *testing.T) {
	c, err := config.Parse([]byte("broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: a.DLT, format: spring, replay_to: a}, {topic: b-dlq, replay_to: b}]}"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := configOf(c, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ForeignDLQs) != 2 || got.ForeignDLQs["a.DLT"] != FormatSpring || got.ForeignDLQs["b-dlq"] != FormatAuto {
		t.Errorf("ForeignDLQs = %v", got.ForeignDLQs)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
}

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
