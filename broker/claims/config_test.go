package claims_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/broker/claims"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestConfigValidate(t *testing.T) {
	testenv.RunValidate(t, []testenv.ValidateCase[claims.Config]{
		{Name: "zero is the default", Config: claims.Config{}},
		{Name: "set", Config: claims.Config{TTL: time.Minute, Timeout: time.Second}},
		{Name: "negative TTL", Config: claims.Config{TTL: -time.Second}, Want: "Config.TTL"},
		{Name: "negative Timeout", Config: claims.Config{Timeout: -time.Second}, Want: "Config.Timeout"},
	}, claims.Config.Validate, func(c claims.Config) error { _, err := claims.New(nil, c); return err })
}
