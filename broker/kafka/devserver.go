package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker/driver"
)

// DevBrokers is the number of brokers of the dev server (`redrive dev`):
// enough for partitions to have leaders on several brokers, as a real
// cluster's do.
const DevBrokers = 3

// devServer is the descriptor's DevServer: an in-memory Kafka cluster of
// DevBrokers brokers on 127.0.0.1 (franz-go's kfake), its listeners on
// cfg.Port and the ports after it, or on random ports.
func devServer(cfg driver.DevServerConfig) (driver.DevServer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Port > 65535-DevBrokers+1 {
		return nil, fmt.Errorf("%w: dev server port %d is not in [0, %d]", ErrInvalidConfig, cfg.Port, 65535-DevBrokers+1)
	}
	opts := []kfake.Opt{kfake.NumBrokers(DevBrokers)} // listens on 127.0.0.1
	if cfg.Port > 0 {
		ports := make([]int, DevBrokers)
		for i := range ports {
			ports[i] = cfg.Port + i
		}
		opts = append(opts, kfake.Ports(ports...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		if cfg.Port > 0 {
			return nil, fmt.Errorf("kafka: start an in-memory cluster on 127.0.0.1 ports %d-%d (is another Kafka there?): %w",
				cfg.Port, cfg.Port+DevBrokers-1, err)
		}
		return nil, fmt.Errorf("kafka: start an in-memory cluster: %w", err)
	}
	return devCluster{c}, nil
}

// devCluster is a kfake cluster as a driver.DevServer.
type devCluster struct{ c *kfake.Cluster }

func (d devCluster) Addrs() []string { return d.c.ListenAddrs() }
func (d devCluster) Close()          { d.c.Close() }
