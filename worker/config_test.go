package worker_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testenv"
	"github.com/redrive/redrive/worker"
	"github.com/redrive/redrive/worker/killswitch"
)

func TestConfigValidate(t *testing.T) {
	var cases []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  worker.Config
		want string
	}{
		{"zero is the default", worker.Config{}, ""},
		{"set", worker.Config{Instance: "pod-1", NoSignals: true, HeartbeatInterval: time.Second, HeartbeatTTL: 5 * time.Second,
			Health: "127.0.0.1:0", PausePoll: time.Second,
			KillSwitches: map[string]killswitch.Config{"w": {Enabled: true}, "off": {}}}, ""},
		{"negative HeartbeatInterval", worker.Config{HeartbeatInterval: -time.Second}, "Config.HeartbeatInterval"},
		{"negative HeartbeatTTL", worker.Config{HeartbeatTTL: -time.Second}, "Config.HeartbeatTTL"},
		{"negative PausePoll", worker.Config{PausePoll: -time.Second}, "Config.PausePoll"},
		{"bad kill switch", worker.Config{KillSwitches: map[string]killswitch.Config{"w": {Enabled: true, TripRatio: 2}}}, `Config.KillSwitches["w"]`},
		{"unnamed kill switch", worker.Config{KillSwitches: map[string]killswitch.Config{"": {Enabled: true}}}, "Config.KillSwitches"},
	} {
		cases = append(cases, testenv.ValidateCase{Name: c.name, Validate: c.cfg.Validate, Want: c.want,
			New: func() error {
				if _, err := worker.New(nil, nil, c.cfg); err != nil {
					return err
				}
				// Parse refuses before it reads the configuration.
				_, err := worker.Parse(t.Context(), []byte("broker: rabbitmq\n"), c.cfg)
				return err
			}})
	}
	testenv.RunValidate(t, cases)
}
