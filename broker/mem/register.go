package mem

import (
	"context"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// Name is the backend's name: the configuration's `broker: memory`, and
// the Broker of its dead letters in a store.
const Name = "memory"

// Config is the backend's driver.Settings.Config: which Server the
// brokers the descriptor opens join.
type Config struct {
	// Server is the server to join; nil: Default(), the process's.
	Server *Server
}

// Validate returns nil: every Config is valid (nil Server: Default). It
// is here so that every configuration of redrive validates alike.
func (c Config) Validate() error { return nil }

func init() {
	driver.Register(driver.Descriptor{
		Name:      Name,
		Open:      open,
		Router:    Router{},
		Words:     driver.Words{Display: "in-memory broker", Unit: "queue", EveryGroup: "every worker of it"},
		DevServer: devServer,
	})
}

// open is the descriptor's Open: a Broker of the configured Server.
func open(_ context.Context, s driver.Settings) (broker.Broker, error) {
	cfg, err := driver.ConfigAs[Config](s)
	if err != nil {
		return nil, err
	}
	srv := cfg.Server
	if srv == nil {
		srv = Default()
	}
	return srv.Connect(BrokerConfig{Instance: s.Instance, Logger: s.Logger}), nil
}

// devServer is the descriptor's DevServer (`redrive dev --broker
// memory`): the process's Server, which every broker the dev stack opens
// joins. It has no address: nothing outside the process reaches it.
func devServer(cfg driver.DevServerConfig) (driver.DevServer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	resetDefault()
	return devStack{}, nil
}

// devStack is the dev server: Close empties the process's Server.
type devStack struct{}

func (devStack) Addrs() []string { return nil }
func (devStack) Close()          { resetDefault() }
