package rabbit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testenv"
)

func TestDialerConfigValidate(t *testing.T) {
	url := "amqp://guest:guest@127.0.0.1:5672/"
	var cases []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  rabbit.DialerConfig
		want string
	}{
		{"one url: defaults", rabbit.DialerConfig{URLs: []string{url}}, ""},
		{"set", rabbit.DialerConfig{URLs: []string{url, url}, Timeout: time.Second, Name: "x"}, ""},
		{"no url", rabbit.DialerConfig{}, "no url"},
		{"bad url", rabbit.DialerConfig{URLs: []string{"http://nope"}}, "url"},
		{"bad second url", rabbit.DialerConfig{URLs: []string{url, "http://nope"}}, "urls[1]"},
		{"negative Timeout", rabbit.DialerConfig{URLs: []string{url}, Timeout: -time.Second}, "DialerConfig.Timeout"},
	} {
		cases = append(cases, testenv.ValidateCase{Name: c.name, Validate: invalidConfig(c.cfg.Validate), Want: c.want,
			New: func() error { _, err := rabbit.NewDialer(c.cfg); return err }})
	}
	testenv.RunValidate(t, cases)
}

func TestDelayConfigValidate(t *testing.T) {
	var cases []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  rabbit.DelayConfig
		want string
	}{
		{"zero is the default", rabbit.DelayConfig{}, ""},
		{"set", rabbit.DelayConfig{Mode: rabbit.DelayHops, Resolution: 100 * time.Millisecond, Factor: 2, Levels: 3}, ""},
		{"bad mode", rabbit.DelayConfig{Mode: "teleport"}, "delay.mode"},
		{"negative resolution", rabbit.DelayConfig{Resolution: -time.Second}, "delay.resolution"},
		{"sub-millisecond resolution", rabbit.DelayConfig{Resolution: 1500 * time.Microsecond}, "delay.resolution"},
		{"factor 1", rabbit.DelayConfig{Factor: 1}, "delay.factor"},
		{"negative levels", rabbit.DelayConfig{Levels: -1}, "delay.levels"},
	} {
		cases = append(cases, testenv.ValidateCase{Name: c.name, Validate: invalidConfig(c.cfg.Validate), Want: c.want,
			New: func() error { return rabbit.Config{Delay: c.cfg}.WithDefaults().Validate() }})
	}
	testenv.RunValidate(t, cases)
}

// invalidConfig returns validate, checking that its errors wrap
// ErrInvalidConfig.
func invalidConfig(validate func() error) func() error {
	return func() error {
		err := validate()
		if err != nil && !errors.Is(err, rabbit.ErrInvalidConfig) {
			return errors.New("does not wrap ErrInvalidConfig: " + err.Error())
		}
		return err
	}
}
