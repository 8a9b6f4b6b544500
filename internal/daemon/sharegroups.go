package daemon

import (
	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/internal/config"
	"github.com/redrive/redrive/lag"
)

// ShareGroups lists the share groups of c's Kafka workers of retry mode
// share, with the consumer group each one's retry topic is read as, for
// lag.KafkaConfig.ShareGroups: their lag comes from the share-partition
// offsets, not from committed offsets.
func ShareGroups(c *config.Config) []lag.ShareGroup {
	if c.Broker != broker.Kafka {
		return nil
	}
	var out []lag.ShareGroup
	for _, w := range c.Workers {
		if w.Retry.Mode == string(broker.Share) {
			out = append(out, lag.ShareGroup{Group: w.Name, RetryGroup: kafka.ShareRetryGroup(w.Name)})
		}
	}
	return out
}
