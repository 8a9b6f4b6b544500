package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
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

// TestSessionSettings: the store's connections plan every statement for
// its values and never JIT-compile (at millions of entries a batch
// insert's estimated cost passes jit_above_cost and compiling it cost
// more than running it), unless the URL sets jit itself.
func TestSessionSettings(t *testing.T) {
	for _, tt := range []struct{ url, jit string }{
		{testenv.PostgreSQL.URL(), "off"},
		{withParam(testenv.PostgreSQL.URL(), "jit=on"), "on"},
	} {
		s, err := pgstore.Open(t.Context(), tt.url, pgstore.Config{Schema: testenv.Schema(t), MaxConns: 1})
		if err != nil {
			testenv.PostgreSQL.Fail(t, err)
		}
		var jit, planning string
		err = s.Pool().QueryRow(t.Context(), `SELECT current_setting('jit'), current_setting('plan_cache_mode')`).Scan(&jit, &planning)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if jit != tt.jit || planning != "force_custom_plan" {
			t.Errorf("Open(%s): jit = %s, plan_cache_mode = %s; want %s, force_custom_plan", pgstore.MaskURL(tt.url), jit, planning, tt.jit)
		}
	}
}

// withParam adds a query parameter to a URL.
func withParam(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}
