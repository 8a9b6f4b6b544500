package keeper_test

import (
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestKeeperConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ok := keeper.Config{Source: nilSource{}, Store: s, Broker: "kafka", DLQs: map[string]broker.Severity{"a.dlq": ""}}
	with := func(f func(*keeper.Config)) keeper.Config { c := ok; f(&c); return c }
	testenv.RunValidate(t, []testenv.ValidateCase[keeper.Config]{
		{Name: "required fields: defaults", Config: ok},
		{Name: "no source", Config: with(func(c *keeper.Config) { c.Source = nil }), Want: "keeper.Config.Source"},
		{Name: "no store", Config: with(func(c *keeper.Config) { c.Store = nil }), Want: "keeper.Config.Store"},
		{Name: "bad broker", Config: with(func(c *keeper.Config) { c.Broker = "NATS!" }), Want: "keeper.Config.Broker"},
		{Name: "no broker", Config: with(func(c *keeper.Config) { c.Broker = "" }), Want: "keeper.Config.Broker"},
		{Name: "no DLQs", Config: with(func(c *keeper.Config) { c.DLQs = nil }), Want: "keeper.Config.DLQs"},
	}, keeper.Config.Validate, func(c keeper.Config) error { _, err := keeper.New(c); return err })
}
