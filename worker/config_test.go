package worker_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
	"github.com/redrive/redrive/worker/killswitch"
)

func TestConfigValidate(t *testing.T) {
	testenv.RunValidate(t, []testenv.ValidateCase[worker.Config]{
		{Name: "zero is the default", Config: worker.Config{}},
		{Name: "set", Config: worker.Config{Instance: "pod-1", NoSignals: true, HeartbeatInterval: time.Second, HeartbeatTTL: 5 * time.Second,
			Health: "127.0.0.1:0", PausePoll: time.Second,
			KillSwitches: map[string]killswitch.Config{"w": {Enabled: true}, "off": {}}}},
		{Name: "negative HeartbeatInterval", Config: worker.Config{HeartbeatInterval: -time.Second}, Want: "Config.HeartbeatInterval"},
		{Name: "negative HeartbeatTTL", Config: worker.Config{HeartbeatTTL: -time.Second}, Want: "Config.HeartbeatTTL"},
		{Name: "negative PausePoll", Config: worker.Config{PausePoll: -time.Second}, Want: "Config.PausePoll"},
		{Name: "bad kill switch", Config: worker.Config{KillSwitches: map[string]killswitch.Config{"w": {Enabled: true, TripRatio: 2}}}, Want: `Config.KillSwitches["w"]`},
		{Name: "unnamed kill switch", Config: worker.Config{KillSwitches: map[string]killswitch.Config{"": {Enabled: true}}}, Want: "Config.KillSwitches"},
	}, worker.Config.Validate, func(c worker.Config) error {
		if _, err := worker.New(nil, nil, c); err != nil {
			return err
		}
		// Parse refuses before it reads the configuration.
		_, err := worker.Parse(t.Context(), []byte("broker: rabbitmq\n"), c)
		return err
	})
}
