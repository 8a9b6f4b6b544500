package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testenv"
)

func TestConfigValidate(t *testing.T) {
	var cases []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  pgstore.Config
		want string
	}{
		{"zero is the default", pgstore.Config{}, ""},
		{"set", pgstore.Config{Schema: "dlq_1", MaxConns: 4, ConnectTimeout: time.Second, BackfillBatch: 10, BackfillManual: true}, ""},
		{"bad schema", pgstore.Config{Schema: "Robert'); DROP TABLE x;--"}, "Config.Schema"},
		{"schema too long", pgstore.Config{Schema: strings.Repeat("a", 64)}, "Config.Schema"},
		{"negative MaxConns", pgstore.Config{MaxConns: -1}, "Config.MaxConns"},
		{"negative ConnectTimeout", pgstore.Config{ConnectTimeout: -time.Second}, "Config.ConnectTimeout"},
		{"negative BackfillBatch", pgstore.Config{BackfillBatch: -1}, "Config.BackfillBatch"},
	} {
		cases = append(cases, testenv.ValidateCase{Name: c.name, Validate: c.cfg.Validate, Want: c.want,
			New: func() error { // Open refuses before it dials: the URL does not matter
				_, err := pgstore.Open(context.Background(), "postgres://127.0.0.1:1/none", c.cfg)
				return err
			}})
	}
	testenv.RunValidate(t, cases)
}
