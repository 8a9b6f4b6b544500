package claims_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/claims"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  claims.Config
		want string // "" = valid, else the field the error must name
	}{
		{"zero is the default", claims.Config{}, ""},
		{"set", claims.Config{TTL: time.Minute, Timeout: time.Second}, ""},
		{"negative TTL", claims.Config{TTL: -time.Second}, "Config.TTL"},
		{"negative Timeout", claims.Config{Timeout: -time.Second}, "Config.Timeout"},
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
			if _, err := claims.New(nil, tt.cfg); err == nil {
				t.Error("New accepted a config Validate refuses")
			}
		})
	}
}
