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
	testenv.RunValidate(t, []testenv.ValidateCase[pgstore.Config]{
		{Name: "zero is the default", Config: pgstore.Config{}},
		{Name: "set", Config: pgstore.Config{Schema: "dlq_1", MaxConns: 4, ConnectTimeout: time.Second, BackfillBatch: 10, BackfillManual: true}},
		{Name: "bad schema", Config: pgstore.Config{Schema: "Robert'); DROP TABLE x;--"}, Want: "Config.Schema"},
		{Name: "schema too long", Config: pgstore.Config{Schema: strings.Repeat("a", 64)}, Want: "Config.Schema"},
		{Name: "negative MaxConns", Config: pgstore.Config{MaxConns: -1}, Want: "Config.MaxConns"},
		{Name: "negative ConnectTimeout", Config: pgstore.Config{ConnectTimeout: -time.Second}, Want: "Config.ConnectTimeout"},
		{Name: "negative BackfillBatch", Config: pgstore.Config{BackfillBatch: -1}, Want: "Config.BackfillBatch"},
	}, pgstore.Config.Validate, func(c pgstore.Config) error {
		// Open refuses before it dials: the URL does not matter.
		_, err := pgstore.Open(context.Background(), "postgres://127.0.0.1:1/none", c)
		return err
	})
}
