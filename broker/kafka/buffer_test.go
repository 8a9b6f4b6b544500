package kafka_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestFullBufferOfStuckPartitionHoldsNoOther checks the back-pressure of a
// tiny partition buffer (in records, then in bytes): while one partition's
// handler is stuck, its buffer fills and the other partitions are still
// fetched and handled; once it is released, every record is handled once,
// in offset order within its partition.
func TestFullBufferOfStuckPartitionHoldsNoOther(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*kafka.Config)
	}{
		{"records", func(c *kafka.Config) { c.MaxBuffered = 5 }},
		{"bytes", func(c *kafka.Config) { c.MaxBufferedBytes = 200 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokers := kafkatest.Cluster(t)
			b := kafkatest.New(t, brokers, func(c *kafka.Config) {
				tc.edit(c)
				// A few records per fetch (each is its own batch, below):
				// the other partitions need many polls while the stuck
				// one is full.
				c.ClientOptions = append(c.ClientOptions, kgo.FetchMaxPartitionBytes(100))
			})
			topic := topicName(t)
			sub := broker.Subscription{Topic: topic, Group: "stuck", Concurrency: 3}
			if err := b.Declare(t.Context(), sub); err != nil {
				t.Fatal(err)
			}
			const n = 300
			var msgs []broker.Message
			for i := range n {
				msgs = append(msgs, msg(fmt.Sprintf("m-%03d", i), fmt.Sprintf("key-%d", i%30)))
			}
			for _, m := range msgs {
				if err := b.Publish(t.Context(), topic, m); err != nil {
					t.Fatal(err)
				}
			}
			perPart := map[int32]int{}
			for _, r := range readAll(t, brokers, topic, n) {
				perPart[r.Partition]++
			}
			stuck, most := int32(-1), 0
			for p, c := range perPart {
				if c > most {
					stuck, most = p, c
				}
			}
			others := n - most
			if others == 0 || most <= 10 {
				t.Fatalf("records per partition %v: want a full partition and others", perPart)
			}

			release := make(chan struct{})
			rec := newRecorder()
			testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
				if d.Partition == stuck {
					select {
					case <-release:
					case <-time.After(time.Minute):
						return fmt.Errorf("not released")
					}
				}
				return nil
			}))
			// The other partitions are handled while the stuck one holds
			// its first record.
			rec.WaitUntil(t, 30*time.Second, "the other partitions", func(cs []call) bool {
				k := 0
				for _, c := range cs {
					if c.d.Partition != stuck {
						k++
					}
				}
				return k >= others
			})
			close(release)
			calls := rec.WaitUntil(t, 30*time.Second, "every record", func(cs []call) bool { return len(cs) >= n })
			if s := successes(calls); len(s) != n || len(calls) != n {
				t.Fatalf("%d calls of %d messages, want each of %d once", len(calls), len(s), n)
			}
			last := map[int32]int64{}
			for _, c := range calls {
				if prev, ok := last[c.d.Partition]; ok && c.d.Offset <= prev {
					t.Errorf("partition %d: offset %d handled after %d", c.d.Partition, c.d.Offset, prev)
				}
				last[c.d.Partition] = c.d.Offset
			}
			for p, c := range perPart {
				waitCommitted(t, brokers, "stuck", topic, p, int64(c))
			}
		})
	}
}

// TestHandlerChangesToDeliveryDoNotLeak checks that what a handler does to
// the Delivery it is given (it is not a copy) changes neither the next
// attempt's delivery nor the dead letter.
func TestHandlerChangesToDeliveryDoNotLeak(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "meddler",
		Policy: retrypolicy.Policy{MaxRetries: 1, Backoff: schedule(10 * time.Millisecond)}}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		id      string
		attempt int
		headers map[string]string
	}
	seenc := make(chan seen, 2)
	testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		seenc <- seen{d.ID, d.Attempt, maps.Clone(d.Headers)}
		d.ID, d.Attempt, d.Key, d.Value = "changed", 99, []byte("changed"), []byte("changed")
		d.Headers["trace"] = "changed"
		d.Headers["added"] = "by the handler"
		delete(d.Headers, driver.HeaderMessageID)
		return failure("always")
	})
	if err := b.Publish(t.Context(), topic, msg("m")); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		s := <-seenc
		if s.id != "m" || s.attempt != attempt || s.headers["trace"] != "t-m" || s.headers["added"] != "" || s.headers[driver.HeaderMessageID] != "m" {
			t.Errorf("call %d saw id %q, attempt %d, headers %v", attempt, s.id, s.attempt, s.headers)
		}
	}
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "meddler", 1, 0)
	e := dls[0].Entry
	if e.MessageID != "m" || e.RetryCount != 1 || string(e.OriginalKey) != "m" || string(e.OriginalValue) != "value of m" ||
		len(e.OriginalHeaders) != 1 || e.OriginalHeaders["trace"] != "t-m" {
		t.Errorf("dead letter = %+v, want m as published, 1 retry", e)
	}
}
