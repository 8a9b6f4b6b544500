package rabbit_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestDialerConfigValidate(t *testing.T) {
	url := "amqp://guest:guest@127.0.0.1:5672/"
	testenv.RunValidate(t, []testenv.ValidateCase[rabbit.DialerConfig]{
		{Name: "one url: defaults", Config: rabbit.DialerConfig{URLs: []string{url}}},
		{Name: "set", Config: rabbit.DialerConfig{URLs: []string{url, url}, Timeout: time.Second, Name: "x"}},
		{Name: "no url", Config: rabbit.DialerConfig{}, Want: "no url"},
		{Name: "bad url", Config: rabbit.DialerConfig{URLs: []string{"http://nope"}}, Want: "url"},
		{Name: "bad second url", Config: rabbit.DialerConfig{URLs: []string{url, "http://nope"}}, Want: "urls[1]"},
		{Name: "negative Timeout", Config: rabbit.DialerConfig{URLs: []string{url}, Timeout: -time.Second}, Want: "DialerConfig.Timeout"},
	}, testenv.Wrapping(rabbit.DialerConfig.Validate, rabbit.ErrInvalidConfig),
		func(c rabbit.DialerConfig) error { _, err := rabbit.NewDialer(c); return err })
}

func TestDelayConfigValidate(t *testing.T) {
	testenv.RunValidate(t, []testenv.ValidateCase[rabbit.DelayConfig]{
		{Name: "zero is the default", Config: rabbit.DelayConfig{}},
		{Name: "set", Config: rabbit.DelayConfig{Mode: rabbit.DelayHops, Resolution: 100 * time.Millisecond, Factor: 2, Levels: 3}},
		{Name: "bad mode", Config: rabbit.DelayConfig{Mode: "teleport"}, Want: "delay.mode"},
		{Name: "negative resolution", Config: rabbit.DelayConfig{Resolution: -time.Second}, Want: "delay.resolution"},
		{Name: "sub-millisecond resolution", Config: rabbit.DelayConfig{Resolution: 1500 * time.Microsecond}, Want: "delay.resolution"},
		{Name: "factor 1", Config: rabbit.DelayConfig{Factor: 1}, Want: "delay.factor"},
		{Name: "negative levels", Config: rabbit.DelayConfig{Levels: -1}, Want: "delay.levels"},
	}, testenv.Wrapping(rabbit.DelayConfig.Validate, rabbit.ErrInvalidConfig),
		func(c rabbit.DelayConfig) error { return rabbit.Config{Delay: c}.WithDefaults().Validate() })
}

func TestKeeperBatchConfig(t *testing.T) {
	testenv.RunValidate(t, []testenv.ValidateCase[rabbit.Config]{
		{Name: "zero is the default", Config: rabbit.Config{}},
		{Name: "set", Config: rabbit.Config{KeeperBatch: 1, KeeperBatchWait: time.Second}},
		{Name: "negative batch", Config: rabbit.Config{KeeperBatch: -1}, Want: "keeper batch"},
		{Name: "batch too large", Config: rabbit.Config{KeeperBatch: rabbit.MaxKeeperBatch + 1}, Want: "keeper batch"},
		{Name: "negative wait", Config: rabbit.Config{KeeperBatchWait: -time.Millisecond}, Want: "keeper batch wait"},
		{Name: "wait too long", Config: rabbit.Config{KeeperBatchWait: 2 * time.Second}, Want: "keeper batch wait"},
	}, testenv.Wrapping(func(c rabbit.Config) error { return c.WithDefaults().Validate() }, rabbit.ErrInvalidConfig),
		func(c rabbit.Config) error { _, err := rabbit.New(t.Context(), c); return err })
}

// The configuration file's defaults are the package's, and reach it.
func TestKeeperBatchFromConfig(t *testing.T) {
	if config.DefaultDeliveryLimit != rabbit.DefaultDeliveryLimit {
		t.Errorf("config's delivery limit default %d, rabbit's %d", config.DefaultDeliveryLimit, rabbit.DefaultDeliveryLimit)
	}
	if config.DefaultKeeperBatch != rabbit.DefaultKeeperBatch || config.DefaultKeeperBatchWait != rabbit.DefaultKeeperBatchWait {
		t.Errorf("config defaults %d, %s; rabbit's %d, %s", config.DefaultKeeperBatch, config.DefaultKeeperBatchWait, rabbit.DefaultKeeperBatch, rabbit.DefaultKeeperBatchWait)
	}
	c := &config.Config{Broker: rabbit.Name, RabbitMQ: config.RabbitMQ{KeeperBatch: 64, KeeperBatchWait: config.Duration(20 * time.Millisecond)}}
	rc, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if rc.KeeperBatch != 64 || rc.KeeperBatchWait != 20*time.Millisecond {
		t.Errorf("rabbit.Config keeper batch %d, wait %s; want 64, 20ms", rc.KeeperBatch, rc.KeeperBatchWait)
	}
}
