package rabbit

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// Name is the backend's name: the configuration's `broker: rabbitmq`,
// a stored dead letter's broker.
const Name = "rabbitmq"

// Words are how people call where RabbitMQ's messages wait.
var Words = driver.Words{Display: "RabbitMQ", Unit: "queue", EveryGroup: "every queue bound to it"}

// The backend registers itself from init: a program that imports this
// package can open it through driver.Lookup(Name), its configuration
// (Config) coming in driver.Settings.Config.
func init() {
	driver.Register(driver.Descriptor{
		Name:     Name,
		Open:     open,
		Router:   Router{},
		Words:    Words,
		Topology: newManager,
		Monitor:  monitor,
	})
}

// open is the descriptor's Open: New with the Config s carries.
func open(ctx context.Context, s driver.Settings) (broker.Broker, error) {
	cfg, err := configOf(s)
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg)
}

// configOf is the Config s carries (the defaults when none), with s's
// instance and logger where it has none of its own.
func configOf(s driver.Settings) (Config, error) {
	cfg, err := driver.ConfigAs[Config](s)
	if err != nil {
		return Config{}, fmt.Errorf("rabbit: %w", err)
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = s.Instance
	}
	if cfg.Logger == nil {
		cfg.Logger = s.Logger
	}
	return cfg, nil
}

// What this backend offers through the seam (checked at compile time).
var (
	_ broker.Broker      = (*Broker)(nil)
	_ driver.Pauser      = (*Broker)(nil)
	_ driver.Instancer   = (*Broker)(nil)
	_ driver.Prober      = (*Broker)(nil)
	_ driver.BatchSource = (*Broker)(nil)
	_ driver.Republisher = (*Broker)(nil)
	_ driver.Router      = Router{}
	_ driver.Topology    = manager{}
)

var _ driver.DepthMonitor = (*DepthMonitor)(nil)
