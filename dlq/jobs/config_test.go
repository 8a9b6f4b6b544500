package jobs_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/jobs"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestJobsConfigValidate(t *testing.T) {
	s := memstore.New(memstore.Config{})
	defer s.Close()
	ops, err := operate.New(operate.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunValidate(t, []testenv.ValidateCase[jobs.Config]{
		{Name: "ops alone: defaults", Config: jobs.Config{Ops: ops}},
		{Name: "unbounded rate", Config: jobs.Config{Ops: ops, DefaultRate: -1, MaxFinished: 3}},
		{Name: "no ops", Config: jobs.Config{}, Want: "jobs.Config.Ops"},
		{Name: "rate too high", Config: jobs.Config{Ops: ops, DefaultRate: operate.MaxReplayRate * 2}, Want: "jobs.Config.DefaultRate"},
		{Name: "shared store, replica, lease", Config: jobs.Config{Ops: ops, Store: dlq.NewMemJobStore(), Replica: "r1", Lease: time.Second}},
		{Name: "lease too short", Config: jobs.Config{Ops: ops, Lease: time.Millisecond}, Want: "jobs.Config.Lease"},
		{Name: "negative lease", Config: jobs.Config{Ops: ops, Lease: -time.Second}, Want: "jobs.Config.Lease"},
	}, jobs.Config.Validate, func(c jobs.Config) error {
		js, err := jobs.New(c)
		if js != nil {
			js.Close()
		}
		return err
	})
}
