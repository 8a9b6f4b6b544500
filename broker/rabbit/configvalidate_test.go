package rabbit_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testenv"
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
