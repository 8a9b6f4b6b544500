package kafka

import (
	"log/slog"
	"testing"

	"github.com/redrive/redrive/internal/config"
)

// The defaults the configuration fills in (and `redrive config check`
// prints) are the backend's own: a configuration that sets nothing maps to
// the same client as a Config that sets nothing.
func TestConfigDefaultsAreTheBackends(t *testing.T) {
	var c config.Config
	c.ApplyDefaults()
	got, err := ConfigFrom(c.Kafka, slog.Default())
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
