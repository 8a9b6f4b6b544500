package dlq_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/internal/testenv"
)

func TestOpsConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	route := dlq.Route{DLQ: "a.dlq", Topic: "a", Worker: "w", Target: "a"}
	var tests []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  dlq.OpsConfig
		want string
	}{
		{"store alone: defaults", dlq.OpsConfig{Store: s}, ""},
		{"set", dlq.OpsConfig{Store: s, Routes: []dlq.Route{route}, ReplayTimeout: time.Second, ReconcileAfter: time.Minute,
			Policies: map[string]dlq.Policy{"a.dlq": {Severity: broker.SeverityCritical}}}, ""},
		{"no store", dlq.OpsConfig{}, "OpsConfig.Store"},
		{"reconcile before timeout", dlq.OpsConfig{Store: s, ReplayTimeout: time.Minute, ReconcileAfter: time.Second}, "OpsConfig.ReconcileAfter"},
		{"reconcile before default timeout", dlq.OpsConfig{Store: s, ReconcileAfter: time.Second}, "OpsConfig.ReconcileAfter"},
		{"route without target", dlq.OpsConfig{Store: s, Routes: []dlq.Route{{DLQ: "a.dlq", Topic: "a", Worker: "w"}}}, "OpsConfig.Routes[0]"},
		{"two routes of a worker", dlq.OpsConfig{Store: s, Routes: []dlq.Route{route, route}}, "OpsConfig.Routes[1]"},
		{"bad severity", dlq.OpsConfig{Store: s, Policies: map[string]dlq.Policy{"a.dlq": {Severity: "urgent"}}}, `OpsConfig.Policies["a.dlq"]`},
		{"bad retention", dlq.OpsConfig{Store: s, Policies: map[string]dlq.Policy{"a.dlq": {Retention: -2}}}, `OpsConfig.Policies["a.dlq"]`},
	} {
		tests = append(tests, testenv.ValidateCase{Name: c.name, Validate: c.cfg.Validate, Want: c.want, New: func() error { _, err := dlq.NewOps(c.cfg); return err }})
	}
	testenv.RunValidate(t, tests)
}

func TestKeeperConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ok := dlq.KeeperConfig{Source: nilSource{}, Store: s, Broker: broker.Kafka, DLQs: map[string]broker.Severity{"a.dlq": ""}}
	with := func(f func(*dlq.KeeperConfig)) dlq.KeeperConfig { c := ok; f(&c); return c }
	var tests []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  dlq.KeeperConfig
		want string
	}{
		{"required fields: defaults", ok, ""},
		{"no source", with(func(c *dlq.KeeperConfig) { c.Source = nil }), "KeeperConfig.Source"},
		{"no store", with(func(c *dlq.KeeperConfig) { c.Store = nil }), "KeeperConfig.Store"},
		{"bad broker", with(func(c *dlq.KeeperConfig) { c.Broker = "nats" }), "KeeperConfig.Broker"},
		{"no DLQs", with(func(c *dlq.KeeperConfig) { c.DLQs = nil }), "KeeperConfig.DLQs"},
	} {
		tests = append(tests, testenv.ValidateCase{Name: c.name, Validate: c.cfg.Validate, Want: c.want, New: func() error { _, err := dlq.NewKeeper(c.cfg); return err }})
	}
	testenv.RunValidate(t, tests)
}

func TestJobsConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ops, err := dlq.NewOps(dlq.OpsConfig{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	var tests []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  dlq.JobsConfig
		want string
	}{
		{"ops alone: defaults", dlq.JobsConfig{Ops: ops}, ""},
		{"unbounded rate", dlq.JobsConfig{Ops: ops, DefaultRate: -1, MaxFinished: 3}, ""},
		{"no ops", dlq.JobsConfig{}, "JobsConfig.Ops"},
		{"rate too high", dlq.JobsConfig{Ops: ops, DefaultRate: dlq.MaxReplayRate * 2}, "JobsConfig.DefaultRate"},
	} {
		tests = append(tests, testenv.ValidateCase{Name: c.name, Validate: c.cfg.Validate, Want: c.want, New: func() error {
			js, err := dlq.NewJobs(c.cfg)
			if js != nil {
				js.Close()
			}
			return err
		}})
	}
	testenv.RunValidate(t, tests)
}
