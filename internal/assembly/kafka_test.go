package assembly_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// The defaults the configuration fills in (and `redrive config check`
// prints) are the backend's own: a configuration that sets nothing maps to
// the same client as a Config that sets nothing.
func TestConfigDefaultsAreTheBackends(t *testing.T) {
	var c config.Config
	c.ApplyDefaults()
	got, err := assembly.KafkaConfig(&c, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	or := func(v, def time.Duration) time.Duration {
		if v == 0 {
			return def
		}
		return v
	}
	if (got.ClientID != "" && got.ClientID != kafka.DefaultClientID) || or(got.CommitInterval, kafka.DefaultCommitInterval) != kafka.DefaultCommitInterval ||
		or(got.FetchMaxWait, kafka.DefaultFetchMaxWait) != kafka.DefaultFetchMaxWait ||
		or(got.HeartbeatInterval, kafka.DefaultHeartbeatInterval) != kafka.DefaultHeartbeatInterval ||
		or(got.SessionTimeout, kafka.DefaultSessionTimeout) != kafka.DefaultSessionTimeout ||
		or(got.RebalanceTimeout, kafka.DefaultRebalanceTimeout) != kafka.DefaultRebalanceTimeout ||
		(got.Partitions != 0 && got.Partitions != kafka.DefaultPartitions) || (got.ReplicationFactor != 0 && got.ReplicationFactor != kafka.DefaultReplicationFactor) {
		t.Errorf("from the configuration's defaults:\n%+v\nthe backend's defaults differ", got)
	}
}

// kafka.foreign_dlqs reach the backend as topic → format, the default
// format (auto) filled in.
func TestConfigForeignDLQs(t *testing.T) {
	c, err := config.Parse([]byte("broker: kafka\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: a.DLT, format: spring, replay_to: a}, {topic: b-dlq, replay_to: b}]}"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := assembly.KafkaConfig(c, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ForeignDLQs) != 2 || got.ForeignDLQs["a.DLT"] != kafka.FormatSpring || got.ForeignDLQs["b-dlq"] != kafka.FormatAuto {
		t.Errorf("ForeignDLQs = %v", got.ForeignDLQs)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
}
