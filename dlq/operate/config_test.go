package operate_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestOpsConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	route := dlq.Route{DLQ: "a.dlq", Topic: "a", Worker: "w", Target: "a"}
	testenv.RunValidate(t, []testenv.ValidateCase[operate.Config]{
		{Name: "store alone: defaults", Config: operate.Config{Store: s}},
		{Name: "set", Config: operate.Config{Store: s, Routes: []dlq.Route{route}, ReplayTimeout: time.Second, ReconcileAfter: time.Minute,
			Policies: map[string]dlq.Policy{"a.dlq": {Severity: broker.SeverityCritical}}}},
		{Name: "no store", Config: operate.Config{}, Want: "operate.Config.Store"},
		{Name: "reconcile before timeout", Config: operate.Config{Store: s, ReplayTimeout: time.Minute, ReconcileAfter: time.Second}, Want: "operate.Config.ReconcileAfter"},
		{Name: "reconcile before default timeout", Config: operate.Config{Store: s, ReconcileAfter: time.Second}, Want: "operate.Config.ReconcileAfter"},
		{Name: "route without target", Config: operate.Config{Store: s, Routes: []dlq.Route{{DLQ: "a.dlq", Topic: "a", Worker: "w"}}}, Want: "operate.Config.Routes[0]"},
		{Name: "two routes of a worker", Config: operate.Config{Store: s, Routes: []dlq.Route{route, route}}, Want: "operate.Config.Routes[1]"},
		{Name: "bad severity", Config: operate.Config{Store: s, Policies: map[string]dlq.Policy{"a.dlq": {Severity: "urgent"}}}, Want: `operate.Config.Policies["a.dlq"]`},
		{Name: "bad retention", Config: operate.Config{Store: s, Policies: map[string]dlq.Policy{"a.dlq": {Retention: -2}}}, Want: `operate.Config.Policies["a.dlq"]`},
	}, operate.Config.Validate, func(c operate.Config) error { _, err := operate.New(c); return err })
}
