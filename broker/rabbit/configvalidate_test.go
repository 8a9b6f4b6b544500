package rabbit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/rabbit"
)

func TestDialerConfigValidate(t *testing.T) {
	url := "amqp://guest:guest@127.0.0.1:5672/"
	tests := []struct {
		name string
		cfg  rabbit.DialerConfig
		want string // "" = valid, else the field the error must name
	}{
		{"one url: defaults", rabbit.DialerConfig{URLs: []string{url}}, ""},
		{"set", rabbit.DialerConfig{URLs: []string{url, url}, Timeout: time.Second, Name: "x"}, ""},
		{"no url", rabbit.DialerConfig{}, "no url"},
		{"bad url", rabbit.DialerConfig{URLs: []string{"http://nope"}}, "url"},
		{"bad second url", rabbit.DialerConfig{URLs: []string{url, "http://nope"}}, "urls[1]"},
		{"negative Timeout", rabbit.DialerConfig{URLs: []string{url}, Timeout: -time.Second}, "DialerConfig.Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, rabbit.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate = %v, want one line wrapping ErrInvalidConfig naming %s", err, tt.want)
			}
			if _, err := rabbit.NewDialer(tt.cfg); err == nil {
				t.Error("NewDialer accepted a config Validate refuses")
			}
		})
	}
}

func TestDelayConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  rabbit.DelayConfig
		want string // "" = valid, else the field the error must name
	}{
		{"zero is the default", rabbit.DelayConfig{}, ""},
		{"set", rabbit.DelayConfig{Mode: rabbit.DelayHops, Resolution: 100 * time.Millisecond, Factor: 2, Levels: 3}, ""},
		{"bad mode", rabbit.DelayConfig{Mode: "teleport"}, "delay.mode"},
		{"negative resolution", rabbit.DelayConfig{Resolution: -time.Second}, "delay.resolution"},
		{"sub-millisecond resolution", rabbit.DelayConfig{Resolution: 1500 * time.Microsecond}, "delay.resolution"},
		{"factor 1", rabbit.DelayConfig{Factor: 1}, "delay.factor"},
		{"negative levels", rabbit.DelayConfig{Levels: -1}, "delay.levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, rabbit.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate = %v, want one line wrapping ErrInvalidConfig naming %s", err, tt.want)
			}
			if err := (rabbit.Config{Delay: tt.cfg}).WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Config.Validate = %v, want the delay's error", err)
			}
		})
	}
}
