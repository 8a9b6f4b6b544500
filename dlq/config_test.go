package dlq_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestOpsConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	route := dlq.Route{DLQ: "a.dlq", Topic: "a", Worker: "w", Target: "a"}
	testenv.RunValidate(t, []testenv.ValidateCase[dlq.OpsConfig]{
		{Name: "store alone: defaults", Config: dlq.OpsConfig{Store: s}},
		{Name: "set", Config: dlq.OpsConfig{Store: s, Routes: []dlq.Route{route}, ReplayTimeout: time.Second, ReconcileAfter: time.Minute,
			Policies: map[string]dlq.Policy{"a.dlq": {Severity: broker.SeverityCritical}}}},
		{Name: "no store", Config: dlq.OpsConfig{}, Want: "OpsConfig.Store"},
		{Name: "reconcile before timeout", Config: dlq.OpsConfig{Store: s, ReplayTimeout: time.Minute, ReconcileAfter: time.Second}, Want: "OpsConfig.ReconcileAfter"},
		{Name: "reconcile before default timeout", Config: dlq.OpsConfig{Store: s, ReconcileAfter: time.Second}, Want: "OpsConfig.ReconcileAfter"},
		{Name: "route without target", Config: dlq.OpsConfig{Store: s, Routes: []dlq.Route{{DLQ: "a.dlq", Topic: "a", Worker: "w"}}}, Want: "OpsConfig.Routes[0]"},
		{Name: "two routes of a worker", Config: dlq.OpsConfig{Store: s, Routes: []dlq.Route{route, route}}, Want: "OpsConfig.Routes[1]"},
		{Name: "bad severity", Config: dlq.OpsConfig{Store: s, Policies: map[string]dlq.Policy{"a.dlq": {Severity: "urgent"}}}, Want: `OpsConfig.Policies["a.dlq"]`},
		{Name: "bad retention", Config: dlq.OpsConfig{Store: s, Policies: map[string]dlq.Policy{"a.dlq": {Retention: -2}}}, Want: `OpsConfig.Policies["a.dlq"]`},
	}, dlq.OpsConfig.Validate, func(c dlq.OpsConfig) error { _, err := dlq.NewOps(c); return err })
}

func TestKeeperConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ok := dlq.KeeperConfig{Source: nilSource{}, Store: s, Broker: "kafka", DLQs: map[string]broker.Severity{"a.dlq": ""}}
	with := func(f func(*dlq.KeeperConfig)) dlq.KeeperConfig { c := ok; f(&c); return c }
	testenv.RunValidate(t, []testenv.ValidateCase[dlq.KeeperConfig]{
		{Name: "required fields: defaults", Config: ok},
		{Name: "no source", Config: with(func(c *dlq.KeeperConfig) { c.Source = nil }), Want: "KeeperConfig.Source"},
		{Name: "no store", Config: with(func(c *dlq.KeeperConfig) { c.Store = nil }), Want: "KeeperConfig.Store"},
		{Name: "bad broker", Config: with(func(c *dlq.KeeperConfig) { c.Broker = "NATS!" }), Want: "KeeperConfig.Broker"},
		{Name: "no broker", Config: with(func(c *dlq.KeeperConfig) { c.Broker = "" }), Want: "KeeperConfig.Broker"},
		{Name: "no DLQs", Config: with(func(c *dlq.KeeperConfig) { c.DLQs = nil }), Want: "KeeperConfig.DLQs"},
	}, dlq.KeeperConfig.Validate, func(c dlq.KeeperConfig) error { _, err := dlq.NewKeeper(c); return err })
}

func TestJobsConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ops, err := dlq.NewOps(dlq.OpsConfig{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunValidate(t, []testenv.ValidateCase[dlq.JobsConfig]{
		{Name: "ops alone: defaults", Config: dlq.JobsConfig{Ops: ops}},
		{Name: "unbounded rate", Config: dlq.JobsConfig{Ops: ops, DefaultRate: -1, MaxFinished: 3}},
		{Name: "no ops", Config: dlq.JobsConfig{}, Want: "JobsConfig.Ops"},
		{Name: "rate too high", Config: dlq.JobsConfig{Ops: ops, DefaultRate: dlq.MaxReplayRate * 2}, Want: "JobsConfig.DefaultRate"},
		{Name: "shared store, replica, lease", Config: dlq.JobsConfig{Ops: ops, Store: dlq.NewMemJobStore(), Replica: "r1", Lease: time.Second}},
		{Name: "lease too short", Config: dlq.JobsConfig{Ops: ops, Lease: time.Millisecond}, Want: "JobsConfig.Lease"},
		{Name: "negative lease", Config: dlq.JobsConfig{Ops: ops, Lease: -time.Second}, Want: "JobsConfig.Lease"},
	}, dlq.JobsConfig.Validate, func(c dlq.JobsConfig) error {
		js, err := dlq.NewJobs(c)
		if js != nil {
			js.Close()
		}
		return err
	})
}
