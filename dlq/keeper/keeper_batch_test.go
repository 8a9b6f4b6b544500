package keeper_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/storekinds"
)

// TestKeeperBatch: a batch holding a redelivery, an invalid id and a
// dead letter PostgreSQL refuses stores every other one in one batch,
// keeps the invalid one raw and reports only the refused one (its message
// stays unacknowledged). Offered again once the database accepts it, the
// batch completes. Counted: the store holds each distinct dead letter
// once, and the counter counts each once.
func TestKeeperBatch(t *testing.T) {
	s := storekinds.Kinds()[1].Open(t)
	pool := s.(*pgstore.Store).Pool()
	if _, err := pool.Exec(t.Context(), `ALTER TABLE dlq_entries ADD CONSTRAINT test_poison CHECK (error_message <> 'poison')`); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	k, err := keeper.New(keeper.Config{Source: nilSource{}, Store: s, Broker: "kafka",
		DLQs: map[string]broker.Severity{"pay.dlq": broker.SeverityCritical}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	dl := func(i int, msg string) dlq.DeadLetter {
		id := offsetID(0, int64(i))
		return dlq.DeadLetter{DLQ: "pay.dlq", ID: id, Identity: id + "@1", Entry: dlq.Entry{OriginalTopic: "pay", OriginalPartition: 0,
			OriginalOffset: int64(i), Reason: "max_retries", ErrorMessage: msg, OriginalValue: []byte(fmt.Sprint("v", i))}}
	}
	if err := k.Handle(t.Context(), dl(0, "first")); err != nil {
		t.Fatal(err)
	}
	batch := []dlq.DeadLetter{dl(0, "first")} // a redelivery
	for i := 1; i <= 7; i++ {
		batch = append(batch, dl(i, "e"))
	}
	batch = append(batch, dl(8, "poison"))
	bad := dl(9, "e")
	bad.ID = "not an id!" // stored raw, with an id of the store's
	batch = append(batch, bad)

	errs := k.HandleBatch(t.Context(), batch)
	for i, err := range errs {
		if i == 8 {
			if err == nil || !strings.Contains(err.Error(), "test_poison") {
				t.Errorf("refused dead letter: %v, want the database's error", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("dead letter %d: %v", i, err)
		}
	}
	count := func() int64 {
		n, err := s.Count(t.Context(), dlq.Query{DLQ: "pay.dlq"})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 9 {
		t.Errorf("stored %d, want 9 (the first, 7 new, the raw one)", n)
	}
	raw, err := s.List(t.Context(), dlq.Query{DLQ: "pay.dlq", NewestFirst: true, Limit: 1})
	if err != nil || len(raw.Records) != 1 || raw.Records[0].Entry.Reason != string(dlq.ReasonUnparseable) {
		t.Errorf("newest entry = %+v, %v; want the raw one", raw.Records, err)
	}

	if _, err := pool.Exec(t.Context(), `ALTER TABLE dlq_entries DROP CONSTRAINT test_poison`); err != nil {
		t.Fatal(err)
	}
	for i, err := range k.HandleBatch(t.Context(), batch) { // offered again
		if err != nil {
			t.Errorf("dead letter %d offered again: %v", i, err)
		}
	}
	if n := count(); n != 10 {
		t.Errorf("stored %d after the batch was offered again, want 10", n)
	}
	if v, _ := sample(t, reg, keeper.MetricMessages, "pay.dlq", "critical"); v.GetCounter().GetValue() != 10 {
		t.Errorf("%s = %v, want 10 (each dead letter once)", keeper.MetricMessages, v.GetCounter().GetValue())
	}
}

// HandleEach keeps the order of a one-at-a-time handler: it stops at the
// first failure.
func TestHandleEach(t *testing.T) {
	var seen []string
	boom := errors.New("boom")
	h := driver.HandleEach(func(_ context.Context, dl dlq.DeadLetter) error {
		seen = append(seen, dl.ID)
		if dl.ID == "b" {
			return boom
		}
		return nil
	})
	errs := h(t.Context(), []dlq.DeadLetter{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	if len(seen) != 2 || errs[0] != nil || !errors.Is(errs[1], boom) || !errors.Is(errs[2], driver.ErrNotTried) {
		t.Errorf("handled %v, errors %v; want a, b and nil, boom, ErrNotTried", seen, errs)
	}
}

// offsetID is the id a backend with offsets gives a dead letter (Kafka's
// "{partition}-{offset}", kafka.RecordID): the tests' example of a
// DeadLetter.ID.
func offsetID(partition int32, offset int64) string {
	return strconv.FormatInt(int64(partition), 10) + "-" + strconv.FormatInt(offset, 10)
}
