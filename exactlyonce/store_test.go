package exactlyonce_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestConfigValidate(t *testing.T) {
	pool := &pgxpool.Pool{} // never used: Validate looks at the fields only
	testenv.RunValidate(t, []testenv.ValidateCase[exactlyonce.Config]{
		{Name: "defaults", Config: exactlyonce.Config{Pool: pool}},
		{Name: "everything", Config: exactlyonce.Config{Pool: pool, Schema: "app_effects", InboxRetention: 30 * 24 * time.Hour, StalledAfter: time.Minute}},
		{Name: "no pool", Config: exactlyonce.Config{}, Want: "Config.Pool"},
		{Name: "bad schema", Config: exactlyonce.Config{Pool: pool, Schema: "Robert'); DROP"}, Want: "Config.Schema"},
		{Name: "retention under a day", Config: exactlyonce.Config{Pool: pool, InboxRetention: time.Hour}, Want: "Config.InboxRetention"},
		{Name: "negative stalled_after", Config: exactlyonce.Config{Pool: pool, StalledAfter: -time.Second}, Want: "Config.StalledAfter"},
	}, exactlyonce.Config.Validate, func(c exactlyonce.Config) error { _, err := exactlyonce.New(c); return err })

	s, err := exactlyonce.New(exactlyonce.Config{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunValidate(t, []testenv.ValidateCase[exactlyonce.InboxConfig]{
		{Name: "inbox defaults", Config: exactlyonce.InboxConfig{}},
		{Name: "serializable", Config: exactlyonce.InboxConfig{IsoLevel: pgx.Serializable}},
		{Name: "repeatable read", Config: exactlyonce.InboxConfig{IsoLevel: pgx.RepeatableRead}, Want: "InboxConfig.IsoLevel"},
	}, exactlyonce.InboxConfig.Validate, func(c exactlyonce.InboxConfig) error { _, err := s.Inbox(c); return err })
	var b broker.Broker = noBroker{}
	testenv.RunValidate(t, []testenv.ValidateCase[exactlyonce.RelayConfig]{
		{Name: "relay defaults", Config: exactlyonce.RelayConfig{Broker: b}},
		{Name: "no broker", Config: exactlyonce.RelayConfig{}, Want: "RelayConfig.Broker"},
		{Name: "batch too large", Config: exactlyonce.RelayConfig{Broker: b, Batch: 10001}, Want: "RelayConfig.Batch"},
		{Name: "negative batch bytes", Config: exactlyonce.RelayConfig{Broker: b, BatchBytes: -1}, Want: "RelayConfig.BatchBytes"},
		{Name: "poll too fast", Config: exactlyonce.RelayConfig{Broker: b, PollInterval: time.Millisecond}, Want: "RelayConfig.PollInterval"},
		{Name: "rebalance too fast", Config: exactlyonce.RelayConfig{Broker: b, RebalanceInterval: time.Millisecond}, Want: "RelayConfig.RebalanceInterval"},
	}, exactlyonce.RelayConfig.Validate, func(c exactlyonce.RelayConfig) error { _, err := s.NewRelay(c); return err })
}

// noBroker is a broker.Broker for the validation cases, never called.
type noBroker struct{ broker.Broker }

// TestMigrateConcurrently: four processes migrate one schema at once;
// each migration is applied once, and the inbox's partitions of today and
// the next days exist.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	pool, schema := newPool(t), testenv.Schema(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: schema, Logger: quiet})
			if err == nil {
				err = s.Migrate(t.Context())
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var versions, parts int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, "redrive_effects_migrations"}.Sanitize()).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != exactlyonce.SchemaVersion() {
		t.Errorf("%d migrations recorded, want %d", versions, exactlyonce.SchemaVersion())
	}
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass($1)`,
		pgx.Identifier{schema, "redrive_inbox"}.Sanitize()).Scan(&parts); err != nil {
		t.Fatal(err)
	}
	if parts != 1+1+exactlyonce.DaysAhead {
		t.Errorf("%d inbox partitions, want partition 0, today and %d days ahead", parts, exactlyonce.DaysAhead)
	}
}

// TestTablesMetrics: the sampled metrics of a scrape follow the outbox
// (unsent messages, the oldest one's age, stalled past stalled_after) and
// read up = 0 when the tables cannot be read.
func TestTablesMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *exactlyonce.Config) { c.StalledAfter = time.Millisecond })
	gauge := func(name string) (float64, bool) {
		return testenv.Gauge(testenv.Scrape(t, e.reg), name, map[string]string{"schema": e.schema})
	}
	if v, ok := gauge(exactlyonce.MetricOutboxUnsent); !ok || v != 0 {
		t.Errorf("unsent of an empty outbox = %v (%v), want 0", v, ok)
	}
	if v, _ := gauge(exactlyonce.MetricOutboxStalled); v != 0 {
		t.Errorf("an empty outbox reads stalled")
	}
	publishTx(t, e, "orders", false, broker.Message{Value: []byte("a")}, broker.Message{Value: []byte("b")})
	testenv.Eventually(t, 10*time.Second, "the message older than stalled_after", func() bool {
		v, _ := gauge(exactlyonce.MetricOutboxOldest)
		return v > 0.001
	})
	for name, want := range map[string]float64{exactlyonce.MetricOutboxUnsent: 2, exactlyonce.MetricOutboxStalled: 1, exactlyonce.MetricOutboxUp: 1} {
		if v, ok := gauge(name); !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", name, v, ok, want)
		}
	}

	reg := prometheus.NewPedanticRegistry()
	if _, err := exactlyonce.New(exactlyonce.Config{Pool: e.pool, Schema: e.schema + "_never", Registerer: reg, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	fams := testenv.Scrape(t, reg)
	if v, ok := testenv.Gauge(fams, exactlyonce.MetricOutboxUp, map[string]string{"schema": e.schema + "_never"}); !ok || v != 0 {
		t.Errorf("up of a schema never migrated = %v (%v), want 0", v, ok)
	}
	if _, ok := testenv.Gauge(fams, exactlyonce.MetricOutboxStalled, nil); ok {
		t.Errorf("stalled exported for tables that cannot be read")
	}
}

// TestRetentionOfDayZero: rows written while their day had no partition
// (partition 0) are deleted once past the retention, the others stay.
func TestRetentionOfDayZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.exec(t, `INSERT INTO `+e.table("redrive_inbox")+` (worker, key, day, received_at) VALUES
		('g', 'old', 0, now() - interval '8 days'), ('g', 'recent', 0, now() - interval '6 days')`)
	if err := e.store.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := e.pool.Query(t.Context(), `SELECT key FROM `+e.table("redrive_inbox_d0")+` ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "recent" {
		t.Errorf("partition 0 keeps %v after retention (7 days), want [recent]", keys)
	}
}
