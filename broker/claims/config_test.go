package claims_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/broker/claims"
	"github.com/redrive/redrive/internal/testenv"
)

func TestConfigValidate(t *testing.T) {
	var cases []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  claims.Config
		want string
	}{
		{"zero is the default", claims.Config{}, ""},
		{"set", claims.Config{TTL: time.Minute, Timeout: time.Second}, ""},
		{"negative TTL", claims.Config{TTL: -time.Second}, "Config.TTL"},
		{"negative Timeout", claims.Config{Timeout: -time.Second}, "Config.Timeout"},
	} {
		cases = append(cases, testenv.ValidateCase{Name: c.name, Validate: c.cfg.Validate, Want: c.want,
			New: func() error { _, err := claims.New(nil, c.cfg); return err }})
	}
	testenv.RunValidate(t, cases)
}
