package operate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestPendingGaugeSameOnEveryReplica: two serve replicas (two Ops, each
// with its own store connection and registry, on one PostgreSQL schema)
// export the same redrive_dlq_pending series, whichever replica stored or
// discarded the entries.
func TestPendingGaugeSameOnEveryReplica(t *testing.T) {
	ctx := context.Background()
	schema := testenv.Schema(t)
	const name = "replicas.gauge.dlq"
	policies := map[string]dlq.Policy{name: {Severity: broker.SeverityCritical}, "empty.dlq": {}}
	var ops []*operate.Ops
	var regs []*prometheus.Registry
	var stores []*pgstore.Store
	for range 2 {
		s, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: schema, MaxConns: 2, Logger: quiet})
		if err != nil {
			testenv.PostgreSQL.Fail(t, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		reg := prometheus.NewRegistry()
		o, err := operate.New(operate.Config{Store: s, Policies: policies, Registerer: reg, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ops, regs, stores = append(ops, o), append(regs, reg), append(stores, s)
	}

	// Replica 0 stores five, replica 1 stores two more and discards three
	// of replica 0's.
	var ids []string
	for i := range 7 {
		e := dlq.Entry{MessageID: fmt.Sprintf("m-%d", i), OriginalTopic: "t", OriginalPartition: -1, OriginalOffset: -1, OriginalValue: []byte("v"), Reason: "permanent"}
		r, _, err := stores[i/5].Insert(ctx, dlq.Record{Broker: "rabbitmq", DLQ: name, Identity: e.MessageID, Entry: e})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	for _, id := range ids[:3] {
		if _, err := ops[1].Discard(ctx, name, id, "tester", "cleanup"); err != nil {
			t.Fatal(err)
		}
	}

	want := "empty.dlq/warning=0 " + name + "/critical=4"
	for i, o := range ops {
		if err := o.RefreshMetrics(ctx); err != nil {
			t.Fatal(err)
		}
		if got := testenv.GaugeSeries(t, regs[i], operate.MetricPending, "dlq", "severity"); got != want {
			t.Errorf("replica %d: redrive_dlq_pending = %q, want %q", i, got, want)
		}
	}
}
