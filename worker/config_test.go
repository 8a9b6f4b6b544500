package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/worker"
	"github.com/redrive/redrive/worker/killswitch"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  worker.Config
		want string // "" = valid, else the field the error must name
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
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate = %v, want one line naming %s", err, tt.want)
			}
			if _, err := worker.New(nil, nil, tt.cfg); err == nil {
				t.Error("New accepted a config Validate refuses")
			}
			if _, err := worker.Parse(t.Context(), []byte("broker: rabbitmq\n"), tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want the Validate error before the configuration is read", err)
			}
		})
	}
}
